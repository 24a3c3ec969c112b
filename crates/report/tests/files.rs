//! The report's files: a FIFO as results.json is refused at once, and the
//! page and summary are written without following a symlink planted under
//! their names.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use nettune_report::{read_results, write_dir};

/// Run `f` on a thread; a hang (the bug) fails the test instead of blocking
/// the suite: after the wait, `unblock` opens the FIFO's other end.
fn no_hang<T: Send + 'static>(fifo: &Path, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(v) => v,
        Err(_) => {
            // Unblock the reader so the process can end, then fail.
            let _ = std::fs::OpenOptions::new().write(true).open(fifo);
            panic!("blocked on the FIFO {}", fifo.display());
        }
    }
}

#[test]
fn a_fifo_results_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("results.json");
    mkfifo(&fifo);
    let d = dir.path().to_path_buf();
    let e = no_hang(&fifo, move || read_results(&d).map(|_| ()).unwrap_err());
    let msg = e.to_string();
    assert!(
        msg.contains("results.json") && msg.contains("FIFO"),
        "{msg}"
    );
}

fn mkfifo(p: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn planted_symlinks_are_replaced_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::FIXTURE, dir.path().join("results.json")).unwrap();
    let victims = tempfile::tempdir().unwrap();
    for name in ["report.html", "report.md"] {
        let victim = victims.path().join(name);
        std::fs::write(&victim, "precious").unwrap();
        symlink(&victim, dir.path().join(name)).unwrap();
    }
    let (html, md) = write_dir(dir.path()).unwrap();
    for (name, written) in [("report.html", html), ("report.md", md)] {
        assert_eq!(
            std::fs::read_to_string(victims.path().join(name)).unwrap(),
            "precious",
            "{name} was written through the symlink"
        );
        let m = std::fs::symlink_metadata(&written).unwrap();
        assert!(m.is_file(), "{name} is not a regular file now");
    }
}

/// Text from the experiment file (name, description, labels, workload
/// arguments) goes into report.md escaped: no line of it is a shell
/// command if the file is pasted into a shell. Checked by running every
/// line with `bash -n`-free execution in a scratch directory: nothing the
/// hostile text names may be created or run.
#[test]
fn no_line_of_report_md_runs_anything_in_a_shell() {
    // One construct per text, so one text's syntax error cannot mask another.
    let mut r = common::synthetic();
    r.name = "x; touch pwned1".into();
    r.description = "pwned2 touch pwned3; touch pwned4".into();
    for n in [
        "a $(touch pwned5)",
        "a `touch pwned6`",
        "a > pwned7",
        "a | touch pwned8",
        "a & touch pwned9",
        "a <(touch pwned12)",
        "a && touch pwned13",
        "a\ntouch pwned14",
    ] {
        r.notes.push(n.into());
    }
    if let Some(c) = r.cells.first_mut() {
        c.label = "c; touch pwned10".into();
    }
    if let Some(w) = r.workloads.first_mut() {
        w.args = vec!["--x; touch pwned11".into()];
    }
    let md = nettune_report::render_markdown(&r);
    let scratch = tempfile::tempdir().unwrap();
    let script_dir = tempfile::tempdir().unwrap();
    let script = script_dir.path().join("line.sh");
    for line in md.lines() {
        // Each line alone, so one line's syntax error cannot hide the next.
        std::fs::write(&script, format!("{line}\n")).unwrap();
        let _ = std::process::Command::new("bash")
            .args(["--norc", "--noprofile"])
            .arg(&script)
            .current_dir(scratch.path())
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
    }
    let made: Vec<_> = std::fs::read_dir(scratch.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(made.is_empty(), "report.md ran something: {made:?}\n{md}");
}
