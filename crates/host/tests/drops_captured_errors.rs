//! A capture whose drop counts cannot be read says which file and what is
//! wrong with it, typed (`Unavailable::BadFormat { file, problem }`).

use model::drops::{FileProblem, Unavailable};
use nettune_host::capture::SAMPLES_SCHEMA_VERSION;
use nettune_host::drops::captured_window;
use nettune_host::Root;
use std::path::PathBuf;

/// A capture of two samples, the second's drops.json being `drops`.
fn capture(drops: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    let s = d.path().join("samples");
    std::fs::create_dir_all(s.join("0000")).expect("mkdir");
    std::fs::create_dir_all(s.join("0001")).expect("mkdir");
    let index = format!(
        r#"{{"schema_version": {SAMPLES_SCHEMA_VERSION}, "interval_ns": 1000000000,
            "samples": [{{"dir": "0000", "at": 1}}, {{"dir": "0001", "at": 1000000001}}]}}"#
    );
    std::fs::write(s.join("index.json"), index).expect("index");
    let good = model::drops::DropCounts::new();
    let good = serde_json::to_string(&good).expect("json");
    std::fs::write(s.join("0000/drops.json"), good).expect("drops");
    std::fs::write(s.join("0001/drops.json"), drops).expect("drops");
    d
}

#[test]
fn a_corrupt_drops_json_is_named_and_typed() {
    let d = capture("{ not json");
    let e = captured_window(&Root::new(d.path())).expect_err("corrupt");
    assert_eq!(
        e,
        Unavailable::BadFormat {
            file: PathBuf::from("samples/0001/drops.json"),
            problem: FileProblem::NotCaptureFile,
        }
    );
    assert!(e.to_string().contains("samples/0001/drops.json"), "{e}");
}

#[test]
fn a_directory_for_drops_json_is_not_a_plain_file() {
    // a directory where the file should be: not a plain file, no errno
    let d = capture("{}");
    let f = d.path().join("samples/0001/drops.json");
    std::fs::remove_file(&f).expect("rm");
    std::fs::create_dir(&f).expect("mkdir");
    let e = captured_window(&Root::new(d.path())).expect_err("a directory");
    assert!(
        matches!(&e, Unavailable::BadFormat { file, problem: FileProblem::NotPlain }
            if file == &PathBuf::from("samples/0001/drops.json")),
        "{e:?}"
    );
}
