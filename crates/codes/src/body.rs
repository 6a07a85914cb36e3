//! The one writer of every error body: `{"code":N,"message":"…"}`, with `"field"`
//! when the caller's input at fault has a name. The message is the code's fixed text;
//! nothing else the server knows (internal error text, a parser's message) is written.

use crate::row::CodeInfo;

/// The error body of the code whose row is `info`; `field` names the part of the
/// caller's input at fault (a key or a dotted path), escaped as JSON.
pub fn json(info: &CodeInfo, field: Option<&str>) -> String {
    let mut out = String::with_capacity(48 + info.message.len() + field.map_or(0, str::len));
    out.push_str("{\"code\":");
    out.push_str(&info.code.to_string());
    out.push_str(",\"message\":\"");
    escape_into(&mut out, info.message);
    out.push('"');
    if let Some(field) = field {
        out.push_str(",\"field\":\"");
        escape_into(&mut out, field);
        out.push('"');
    }
    out.push('}');
    out
}

/// Appends `text` as the inside of a JSON string.
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
}
