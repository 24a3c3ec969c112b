//! The exit status doctor documents is the one it returns: 0/1/2 by the
//! worst severity, `EXIT_ERROR` (3) when it could not run, in
//! docs/exit-codes.md and the README alike.

#![allow(clippy::unwrap_used)]

use nettune::cmd::doctor::EXIT_ERROR;
use std::path::Path;

fn doc(rel: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel),
    )
    .unwrap()
}

#[test]
fn exit_codes_doc_and_readme_say_what_doctor_returns() {
    // The code: a bad --sample is "could not run".
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["doctor", "--sample", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(i32::from(EXIT_ERROR)));

    let codes = doc("docs/exit-codes.md");
    let row = codes
        .lines()
        .find(|l| l.starts_with("| `nettune doctor`"))
        .unwrap();
    assert!(row.contains("worst finding a warning"), "{row}");
    assert!(row.contains("2 a critical finding"), "{row}");
    assert!(
        row.contains(&format!("{EXIT_ERROR} doctor could not run")),
        "{row}"
    );
    let general = codes.lines().find(|l| l.starts_with("| 3 |")).unwrap();
    assert!(general.contains("`doctor`: it could not run"), "{general}");

    let readme = doc("README.md");
    assert!(
        readme.contains(&format!(
            "`nettune doctor` exits 0/1/2 by the worst severity it finds (nothing above info, warnings, critical) and {EXIT_ERROR} when it could not run"
        )),
        "README's exit-code line"
    );
    let doctor_md = doc("docs/doctor.md");
    assert!(
        doctor_md.contains(&format!("**{EXIT_ERROR}** doctor could not run")),
        "docs/doctor.md"
    );
}

/// Issue 38, the first hour: the README says what the main job needs
/// (root, ip/veth/netns, tc, the Rust version the workspace declares), the
/// fleet row names `fleet bench`, and its exit-code table has fleet's 4.
#[test]
fn readme_names_prerequisites_fleet_bench_and_every_exit_code() {
    let readme = doc("README.md");
    let cargo = doc("Cargo.toml");
    let rust = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    let pre = readme
        .split("## Prerequisites")
        .nth(1)
        .expect("a Prerequisites section")
        .split("\n## ")
        .next()
        .unwrap();
    for want in ["root", "ip netns", "veth", "tc", "tun", rust] {
        assert!(pre.contains(want), "prerequisites lack {want}: {pre}");
    }
    let fleet = readme
        .lines()
        .find(|l| l.starts_with("| `nettune fleet "))
        .unwrap();
    assert!(fleet.contains("bench"), "{fleet}");
    let codes = readme.split("## Exit codes").nth(1).unwrap();
    for code in [
        "| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 5 |", "| 6 |", "| 130 |",
    ] {
        assert!(codes.contains(code), "README exit codes lack {code}");
    }
}
