//! `nettune report DIR`: the files it writes from the SYNTHETIC fixture
//! (crates/report/tests/fixtures, made-up numbers), and its one-line errors.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/synthetic-results.json")
}

fn nettune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .output()
        .unwrap()
}

fn results_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(), dir.path().join("results.json")).unwrap();
    dir
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn writes_both_files_into_the_results_directory() {
    let dir = results_dir();
    let o = nettune(&["report", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg id=\"chart-heatmap\""));
    assert!(md.starts_with("# nettune report: synthetic-fixture"));
    assert!(stderr(&o).contains("report.html"), "{}", stderr(&o));
}

#[test]
fn html_and_markdown_go_where_asked() {
    let dir = results_dir();
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("page.html");
    let o = nettune(&[
        "report",
        dir.path().to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--markdown",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(html.exists());
    assert!(!dir.path().join("report.md").exists());
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(stdout.starts_with("# nettune report"), "{stdout}");
}

/// Exit 1 with one line on stderr containing `want`.
fn fails_with(args: &[&str], want: &str) {
    let o = nettune(args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("nettune: report: "), "{err}");
    assert!(err.contains(want), "{err}");
    // The cause is said once (anyhow's `{:#}` prints every source in the chain).
    assert_eq!(err.matches(want).count(), 1, "{err}");
}

#[test]
fn a_missing_directory_is_one_line() {
    fails_with(
        &["report", "/nonexistent/nettune-results"],
        "/nonexistent/nettune-results: not a directory",
    );
}

#[test]
fn a_directory_without_results_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(
        &["report", dir.path().to_str().unwrap()],
        "no results.json here",
    );
}

#[test]
fn a_file_that_is_not_results_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("results.json"),
        "{\"schema_version\": 1, \"cells\": 3}",
    )
    .unwrap();
    fails_with(
        &["report", dir.path().to_str().unwrap()],
        "results file is not valid",
    );
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = results_dir();
    let path = dir.path().join("results.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let next = model::results::RESULTS_SCHEMA_VERSION + 1;
    v["schema_version"] = serde_json::json!(next);
    std::fs::write(&path, v.to_string()).unwrap();
    fails_with(
        &["report", dir.path().to_str().unwrap()],
        &format!("results schema version {next} is newer"),
    );
    assert!(!dir.path().join("report.html").exists());
}

#[test]
fn help_has_examples() {
    let o = nettune(&["report", "--help"]);
    let help = String::from_utf8(o.stdout).unwrap();
    assert!(
        help.contains("Examples:") && help.contains("nettune report nettune-report"),
        "{help}"
    );
}

#[test]
fn an_unwritable_output_is_one_line() {
    let dir = results_dir();
    fails_with(
        &[
            "report",
            dir.path().to_str().unwrap(),
            "--html",
            "/nonexistent/dir/page.html",
        ],
        "cannot write /nonexistent/dir/page.html: No such file or directory",
    );
}
