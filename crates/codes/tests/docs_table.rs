//! `docs/codes.md` is checked against the one code table: its table must be exactly
//! the rendering of `codes::Code::all()`, so the documentation cannot drift. On a
//! mismatch the expected table is printed, ready to paste.

use codes::{Code, LogLevel};

/// The markdown table of every code, as `docs/codes.md` must hold it.
fn rendered() -> String {
    let mut out = String::from(
        "| code | HTTP | message | 中文 | retry | log | metric `reason` |\n|---|---|---|---|---|---|---|\n",
    );
    for code in Code::all() {
        let info = code.info();
        let level = match info.level {
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | `{}` |\n",
            info.code,
            info.status,
            info.message,
            info.message_zh,
            if info.retryable { "yes" } else { "" },
            level,
            info.label
        ));
    }
    out
}

#[test]
fn docs_codes_md_lists_the_one_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/codes.md");
    let doc = std::fs::read_to_string(path).expect("docs/codes.md");
    let expected = rendered();
    let start = doc
        .find("| code | HTTP |")
        .expect("docs/codes.md has the code table");
    let table: String = doc[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        table == expected,
        "docs/codes.md differs from the code table; it should read:\n\n{expected}"
    );
}
