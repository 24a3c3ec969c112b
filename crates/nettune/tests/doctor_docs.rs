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
