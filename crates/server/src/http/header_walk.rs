//! The first value of several request headers, found in one walk over the header map.
//! A lookup by name hashes the name and probes the table, once per name; a request
//! carries a handful of headers, so comparing each of them with the few names wanted
//! costs less than a lookup per name, on the path of every playlist and segment.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The first value of each of `names` in `headers` (what [`HeaderMap::get`] would
/// answer for each), in the order of `names`.
pub fn first_values<'h, const N: usize>(
    headers: &'h HeaderMap,
    names: [&HeaderName; N],
) -> [Option<&'h HeaderValue>; N] {
    let mut found = [None; N];
    let mut missing = N;
    for (name, value) in headers {
        let Some(i) = names.iter().position(|wanted| *wanted == name) else {
            continue;
        };
        if found[i].is_none() {
            found[i] = Some(value);
            missing -= 1;
            if missing == 0 {
                break;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;
    use proptest::prelude::*;

    const MEMBER: HeaderName = HeaderName::from_static("x-brdyun-member");

    #[test]
    fn finds_each_name_and_misses_the_absent() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("node"));
        headers.insert(header::USER_AGENT, HeaderValue::from_static("Chrome/120"));
        headers.insert(MEMBER, HeaderValue::from_static("m1"));
        let [ua, member, cookie] =
            first_values(&headers, [&header::USER_AGENT, &MEMBER, &header::COOKIE]);
        assert_eq!(ua.unwrap(), "Chrome/120");
        assert_eq!(member.unwrap(), "m1");
        assert!(cookie.is_none());
    }

    proptest! {
        /// The answers are `get`'s for every name, over headers repeated, absent and
        /// in any order.
        #[test]
        fn answers_what_get_answers(
            entries in prop::collection::vec((0usize..5, "[a-z0-9]{0,6}"), 0..12),
        ) {
            let names = [
                header::USER_AGENT,
                header::HOST,
                MEMBER,
                HeaderName::from_static("x-brdyun-device"),
                HeaderName::from_static("x-forwarded-proto"),
            ];
            let mut headers = HeaderMap::new();
            for (i, value) in &entries {
                headers.append(names[*i].clone(), HeaderValue::from_str(value).unwrap());
            }
            let found = first_values(&headers, [&names[0], &names[2], &names[3], &names[4]]);
            for (got, name) in found.iter().zip([&names[0], &names[2], &names[3], &names[4]]) {
                prop_assert_eq!(*got, headers.get(name));
            }
        }
    }
}
