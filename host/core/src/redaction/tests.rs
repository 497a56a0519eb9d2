use super::*;

/// A credential of each kind in a real format (made up, assembled here), with the rule that
/// must find it.
fn credentials() -> Vec<(&'static str, String)> {
    let alnum = |n: usize, seed: u64| -> String {
        let set = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                set[(x >> 33) as usize % set.len()] as char
            })
            .collect()
    };
    vec![
        ("aws-access-token", format!("AKIA{}", "Z7VQ3MXP4KTR2WJN")),
        ("github-pat", format!("ghp_{}", alnum(36, 1))),
        ("gitlab-pat", format!("glpat-{}", alnum(20, 2))),
        ("slack-bot-token", format!("xoxb-{}-{}-{}", "2819384756102", "4729018374651", alnum(24, 3))),
        ("stripe-access-token", format!("sk_live_{}", alnum(24, 4))),
        ("anthropic-api-key", format!("sk-ant-api03-{}AA", alnum(93, 5))),
        ("jwt", format!("eyJ{}.eyJ{}.{}", alnum(30, 6), alnum(40, 7), alnum(43, 8))),
        (
            "private-key",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----",
                alnum(64, 9),
                alnum(64, 10)
            ),
        ),
        ("url-password", format!("postgres://ann:{}@db.internal:5432/team", alnum(14, 11))),
    ]
}

#[test]
fn a_credential_of_each_kind_is_found_in_code_logs_json_and_prose() {
    let r = Redactor::builtin().unwrap();
    for (rule, secret) in credentials() {
        let shapes = [
            format!("let key = \"{secret}\";\n"),
            format!("2026-12-07T00:13:23Z INFO connecting with {secret} now\n"),
            format!("{{\"credential\": \"{secret}\", \"ok\": true}}"),
            format!("Here is what I pasted: {secret} and it does not work"),
        ];
        for text in shapes {
            let found = r.find(&text);
            assert_eq!(found.len(), 1, "{rule} in {text:?}: {found:?}");
            let (start, end) = (found[0].start, found[0].end);
            assert!(
                text[start..end].contains(secret.split(['@', '\n']).next().unwrap_or("")) || rule == "url-password"
            );
            let (redacted, _) = r.redact(&text, b"key");
            let plain = secret.trim_start_matches("postgres://ann:");
            let plain = plain.split('@').next().unwrap_or(plain);
            assert!(!redacted.contains(plain), "{rule}: {redacted}");
            assert!(redacted.contains("[secret:"), "{rule}: {redacted}");
        }
    }
}

#[test]
fn a_dotenv_line_with_a_high_entropy_value_is_found_and_paths_and_words_are_not() {
    let r = Redactor::builtin().unwrap();
    let env = "APP_ENV=production\nPATH=/usr/local/bin:/usr/bin\nSERVICE_CREDENTIAL=q8Zr2LxV9mPw4TnK7sYbG3\nexport PORT=8080\n";
    let found = r.find(env);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(&env[found[0].start..found[0].end], "q8Zr2LxV9mPw4TnK7sYbG3");
    // The file's text as a tool's JSON result holds it: lines end at an escaped `\n`.
    let json =
        r#"{"path": ".env", "content": "APP_ENV=production\nSERVICE_CREDENTIAL=q8Zr2LxV9mPw4TnK7sYbG3\nPORT=8080\n"}"#;
    let found = r.find(json);
    assert_eq!(found.iter().map(|f| &json[f.start..f.end]).collect::<Vec<_>>(), ["q8Zr2LxV9mPw4TnK7sYbG3"]);
}

#[test]
fn look_alikes_are_left_as_they_are() {
    let r = Redactor::builtin().unwrap();
    let texts = [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Ann <ann@example.org>",
        "id: 123e4567-e89b-12d3-a456-426614174000 session 01M96XJ716APP3JC48J3RV8TW7",
        "checksum = \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "AWS example: AKIAIOSFODNN7EXAMPLE is the documentation's key",
        "postgres://ann:${DB_PASSWORD}@db.internal/team and https://user:****@host/x",
        "the token is in $SESHAT_TOKEN; the key in ANTHROPIC_API_KEY",
        "fn main() { let password = read_password()?; println!(\"{}\", password.len()); }",
    ];
    for text in texts {
        assert_eq!(r.find(text), Vec::<Finding>::new(), "{text}");
    }
}

#[test]
fn a_placeholder_names_the_rule_and_the_same_secret_under_the_same_key_alone() {
    let r = Redactor::builtin().unwrap();
    let secret = format!("ghp_{}", "x".repeat(0) + "Q9vT2mLk8ZpR4wN7sYb3HdF6jC1xE5aG0uKi");
    let text = format!("first {secret} then again {secret}");
    let (once, found) = r.redact(&text, b"store key");
    assert_eq!(found.len(), 2, "{found:?}");
    let placeholders: Vec<&str> = once.split(' ').filter(|w| w.starts_with("[secret:")).collect();
    assert_eq!(placeholders.len(), 2, "{once}");
    assert_eq!(placeholders[0], placeholders[1], "the same secret, the same placeholder");
    assert!(placeholders[0].starts_with("[secret:github-pat:"), "{once}");
    let (other, _) = r.redact(&text, b"another store");
    assert_ne!(once, other, "the hash is keyed");
    let (twice, again) = r.redact(&once, b"store key");
    assert_eq!((twice.as_ref(), again.len()), (once.as_ref(), 0), "a placeholder is never redacted again");
}

#[test]
fn hmac_matches_rfc_4231() {
    // RFC 4231, test case 2.
    let tag = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

#[test]
fn a_users_pattern_is_a_rule_and_a_bad_one_is_named() {
    let patterns = [("acme-ticket-key".to_string(), r"ACME-[0-9]{6}-[A-Z]{4}".to_string())];
    let r = Redactor::with_patterns(&patterns).unwrap();
    let found = r.find("use ACME-123456-QWER here");
    assert_eq!(found.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>(), ["acme-ticket-key"]);
    let bad = Redactor::with_patterns(&[("broken".into(), "([".into())]).unwrap_err().to_string();
    assert!(bad.contains("`broken`"), "{bad}");
}

#[test]
fn every_built_in_rule_compiles() {
    let r = Redactor::builtin().unwrap();
    let broken: Vec<&str> =
        r.rules.rules.iter().filter(|rule| rule.regex().is_none()).map(|rule| rule.id.as_str()).collect();
    assert_eq!(broken, Vec::<&str>::new());
    assert!(r.rules.rules.len() > 200, "gitleaks' rules and Seshat's: {}", r.rules.rules.len());
}

#[test]
fn in_a_long_text_a_credential_is_found_around_its_keyword_even_across_a_line_break() {
    let r = Redactor::builtin().unwrap();
    let filler: String = (0..2000).map(|i| format!("   Compiling crate-{i} v0.1.{i}\n")).collect();
    let token = "ghp_Q9vT2mLk8ZpR4wN7sYb3HdF6jC1xE5aG0uKi";
    let text = format!("{filler}let github_token =\n    \"{token}\";\n{filler}pasted {token} at the end");
    let found = r.find(&text);
    let at: Vec<usize> = text.match_indices(token).map(|(i, _)| i).collect();
    assert_eq!(found.len(), 2, "{:?}", found.iter().map(|f| &text[f.start..f.end]).collect::<Vec<_>>());
    for (f, start) in found.iter().zip(at) {
        assert!(f.start <= start && start + token.len() <= f.end, "{f:?}");
    }
}

#[test]
fn no_rule_takes_a_placeholder_for_a_credential() {
    let r = Redactor::builtin().unwrap();
    for (rule, secret) in credentials() {
        for text in [
            format!("let key = \"{secret}\";\n"),
            format!("{{\"credential\": \"{secret}\", \"ok\": true}}"),
            format!("Here is what I pasted: {secret} and it does not work"),
        ] {
            let (once, _) = r.redact(&text, b"key");
            let (twice, again) = r.redact(&once, b"key");
            assert_eq!((twice.as_ref(), again.len()), (once.as_ref(), 0), "{rule}: {once}");
        }
    }
}
