//! Fuzzing the experiment file reader: arbitrary text, arbitrary bytes as
//! lossy text, and mutated valid files never panic; every error is one line;
//! every accepted file has a name that can safely name a directory and be
//! printed, and a bounded design.
#![allow(clippy::unwrap_used)]

use nettune_model::experiment::{parse, Experiment, MAX_CELLS, MAX_FILE_BYTES};
use proptest::prelude::*;

const VALID: &str = r#"name = "demo"
description = "a demo"
seed = 7
repeats = 3
warmup = 1

[hosts.lab]
hosts = 2
queues = 2

[[workload]]
name = "s"
test = "tcp-stream"
duration_s = 1

[[factor]]
name = "tcp_tw_reuse"
levels = [0, 1]

[responses]
metrics = ["throughput"]
"#;

/// What a name may be: 1 to 32 of `A-Z a-z 0-9 _ -` (like workload names).
fn safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What every accepted file must satisfy.
fn check_accepted(e: &Experiment) -> Result<(), TestCaseError> {
    prop_assert!(safe_name(&e.name), "accepted name {:?}", e.name);
    for w in &e.workloads {
        prop_assert!(safe_name(&w.name), "accepted workload {:?}", w.name);
    }
    prop_assert!(e.cell_count() <= MAX_CELLS);
    prop_assert!(e.cells().len() == e.cell_count());
    Ok(())
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(e) => check_accepted(&e),
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(!msg.contains('\n') && !msg.contains('\r'), "{}", msg);
            prop_assert!(!msg.contains('\u{1b}'), "{}", msg);
            prop_assert!(msg.len() < 4096, "{} bytes", msg.len());
            Ok(())
        }
    }
}

/// A TOML basic string holding `s` (escapes for quotes, backslashes and
/// control characters), so any text can reach the `name` key.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The defect: a name was used as a path (`nettune-experiment-{name}`) and
/// printed raw.
#[test]
fn path_and_escape_code_names_are_refused() {
    for name in [
        "x/../../../../tmp/y",
        "../y",
        "/tmp/y",
        ".",
        "..",
        "a b",
        "\u{1b}[2J\u{1b}[31mred",
        "line\nbreak",
        "",
        &"n".repeat(33),
    ] {
        let text = VALID.replace("\"demo\"", &toml_string(name));
        let e = parse(&text).expect_err(name);
        let msg = e.to_string();
        assert_eq!(e.key, "name", "{msg}");
        assert_eq!(e.line, 1, "{msg}");
        assert!(!msg.contains('\u{1b}') && !msg.contains('\n'), "{msg:?}");
    }
    for name in ["demo", "rhel6-bdp", "rps_on_off", &"n".repeat(32)] {
        let text = VALID.replace("\"demo\"", &toml_string(name));
        assert_eq!(parse(&text).unwrap().name, name);
    }
}

/// Found by `arbitrary_bytes_never_panic`: the key of a TOML syntax error
/// was echoed raw, so an escape code in the file reached the terminal.
#[test]
fn a_toml_error_key_is_escaped() {
    let e = parse("\0\u{1b}=").unwrap_err();
    let msg = e.to_string();
    assert!(!msg.contains('\u{1b}') && !msg.contains('\0'), "{msg:?}");
}

#[test]
fn oversized_input_is_refused_before_parsing() {
    let text = format!("{VALID}#{}", "x".repeat(MAX_FILE_BYTES));
    assert!(parse(&text).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any text at all.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        check(&text)?;
    }

    /// Arbitrary bytes, read as the CLI would never hand them (lossy).
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    /// Any string as the name: accepted exactly when it is a safe name.
    #[test]
    fn any_name_is_accepted_only_when_safe(name in "\\PC{0,40}|[a-zA-Z0-9_./-]{0,40}") {
        let text = VALID.replace("\"demo\"", &toml_string(&name));
        match parse(&text) {
            Ok(e) => prop_assert_eq!(&e.name, &name),
            Err(e) => {
                prop_assert!(!safe_name(&name), "{} refused: {}", name, e);
                prop_assert_eq!(e.key.as_str(), "name");
            }
        }
        prop_assert_eq!(parse(&text).is_ok(), safe_name(&name));
    }

    /// Several edits of a valid file: cut, insert or repeat a slice.
    #[test]
    fn mutated_files_never_panic(
        edits in proptest::collection::vec(
            (0usize..4096, 0usize..24, "[ -~\n\t\"\\[\\]=]{0,12}", 0u8..3),
            1..6,
        ),
    ) {
        let mut text = VALID.to_string();
        for (at, len, insert, kind) in edits {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + len).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            match kind {
                0 => text.replace_range(at..end, &insert),
                1 => text.insert_str(at, &insert),
                _ => {
                    let slice = text[at..end].to_string();
                    text.insert_str(end, &slice.repeat(3));
                }
            }
        }
        check(&text)?;
    }
}
