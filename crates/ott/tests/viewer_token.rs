//! Viewer tokens for private meetings: EdDSA JWTs minted by a platform,
//! verified by every node with the platform's public keys.

use ott::{mint_viewer_token, TokenError, ViewerClaims, ViewerKey, ViewerKeySet};
use ring::signature::Ed25519KeyPair;

const NOW: i64 = 1_800_000_000;

fn pair(seed: u8) -> Ed25519KeyPair {
    Ed25519KeyPair::from_seed_unchecked(&[seed; 32]).expect("a seed makes a pair")
}

fn claims() -> ViewerClaims {
    ViewerClaims {
        meeting: "board-2026".into(),
        viewer: "alice@example.com".into(),
        expires_unix_s: NOW + 3600,
        max_sessions: Some(2),
    }
}

fn keys() -> ViewerKeySet {
    ViewerKeySet::new(vec![ViewerKey::of_pair("k1", &pair(1))])
}

/// `header.payload` as base64url of the given JSON texts, signed by `signer`.
fn raw(header: &str, payload: &str, signer: &Ed25519KeyPair) -> String {
    let enc = |t: &str| b64(t.as_bytes());
    let signed = format!("{}.{}", enc(header), enc(payload));
    let signature = signer.sign(signed.as_bytes());
    format!("{signed}.{}", b64(signature.as_ref()))
}

fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

#[test]
fn a_minted_token_verifies_and_grants_its_claims() {
    let token = mint_viewer_token(&claims(), "k1", &pair(1));
    assert_eq!(keys().verify(&token, NOW), Ok(claims()));
    // The public key travels as a JWK's `x`.
    let key = ViewerKey::of_pair("k1", &pair(1));
    assert_eq!(
        ViewerKey::from_base64url("k1", &key.public_base64url()),
        Ok(key)
    );
    assert!(ViewerKey::from_base64url("k1", "AAAA").is_err());
    assert!(ViewerKey::from_base64url("", &b64(&[0; 32])).is_err());
}

#[test]
fn a_token_written_by_hand_as_any_jose_library_would_verifies() {
    let token = raw(
        r#"{"typ":"JWT","alg":"EdDSA","kid":"k1"}"#,
        r#"{"iss":"platform","aud":["other","brdyun"],"sub":"bob","meeting":"m","exp":1800000100,"nbf":1799999990,"iat":1799999990}"#,
        &pair(1),
    );
    let granted = keys().verify(&token, NOW).expect("valid");
    assert_eq!(
        (granted.viewer.as_str(), granted.meeting.as_str()),
        ("bob", "m")
    );
    assert_eq!(granted.max_sessions, None);
}

#[test]
fn forged_expired_and_foreign_tokens_are_refused_with_their_reason() {
    let keys = keys();
    let good = mint_viewer_token(&claims(), "k1", &pair(1));
    // Another key under the same id: a forgery.
    let forged = mint_viewer_token(&claims(), "k1", &pair(9));
    assert_eq!(keys.verify(&forged, NOW), Err(TokenError::BadSignature));
    // A payload swapped under a valid signature.
    let mut parts: Vec<&str> = good.split('.').collect();
    let other = mint_viewer_token(
        &ViewerClaims {
            meeting: "other-meeting".into(),
            ..claims()
        },
        "k1",
        &pair(9),
    );
    parts[1] = other.split('.').nth(1).expect("payload");
    assert_eq!(
        keys.verify(&parts.join("."), NOW),
        Err(TokenError::BadSignature)
    );
    assert_eq!(
        keys.verify(&mint_viewer_token(&claims(), "k2", &pair(1)), NOW),
        Err(TokenError::UnknownKey)
    );
    // Expiry, with a minute of leeway.
    assert!(keys.verify(&good, NOW + 3600 + 60).is_ok());
    assert_eq!(
        keys.verify(&good, NOW + 3600 + 61),
        Err(TokenError::Expired)
    );
    let later = raw(
        r#"{"alg":"EdDSA","kid":"k1"}"#,
        &format!(
            r#"{{"aud":"brdyun","sub":"v","meeting":"m","exp":{},"nbf":{}}}"#,
            NOW + 900,
            NOW + 600
        ),
        &pair(1),
    );
    assert_eq!(keys.verify(&later, NOW), Err(TokenError::NotYetValid));
    assert!(keys.verify(&later, NOW + 545).is_ok());
    let audience = raw(
        r#"{"alg":"EdDSA","kid":"k1"}"#,
        &format!(
            r#"{{"aud":"elsewhere","sub":"v","meeting":"m","exp":{}}}"#,
            NOW + 60
        ),
        &pair(1),
    );
    assert_eq!(keys.verify(&audience, NOW), Err(TokenError::WrongAudience));
    let no_viewer = raw(
        r#"{"alg":"EdDSA","kid":"k1"}"#,
        &format!(
            r#"{{"aud":"brdyun","sub":"","meeting":"m","exp":{}}}"#,
            NOW + 60
        ),
        &pair(1),
    );
    assert_eq!(keys.verify(&no_viewer, NOW), Err(TokenError::MissingClaim));
    // Algorithms other than EdDSA, "none" first of all.
    for alg in ["none", "HS256", "RS256"] {
        let token = raw(
            &format!(r#"{{"alg":"{alg}","kid":"k1"}}"#),
            r#"{"aud":"brdyun","sub":"v","meeting":"m","exp":1900000000}"#,
            &pair(1),
        );
        assert_eq!(
            keys.verify(&token, NOW),
            Err(TokenError::UnsupportedAlgorithm),
            "{alg}"
        );
    }
    for malformed in [
        "",
        "a.b",
        "a.b.c.d",
        "!!.??.**",
        &"x".repeat(5000),
        &format!("{good}="),
    ] {
        assert_eq!(
            keys.verify(malformed, NOW),
            Err(TokenError::Malformed),
            "{malformed:.40}"
        );
    }
    assert_eq!(
        ViewerKeySet::default().verify(&good, NOW),
        Err(TokenError::UnknownKey)
    );
}

#[test]
fn during_a_rotation_both_keys_verify() {
    let both = ViewerKeySet::new(vec![
        ViewerKey::of_pair("2026-11", &pair(1)),
        ViewerKey::of_pair("2026-12", &pair(2)),
    ]);
    for (kid, seed) in [("2026-11", 1), ("2026-12", 2)] {
        assert!(both
            .verify(&mint_viewer_token(&claims(), kid, &pair(seed)), NOW)
            .is_ok());
    }
    let retired = ViewerKeySet::new(vec![ViewerKey::of_pair("2026-12", &pair(2))]);
    assert_eq!(
        retired.verify(&mint_viewer_token(&claims(), "2026-11", &pair(1)), NOW),
        Err(TokenError::UnknownKey)
    );
}
