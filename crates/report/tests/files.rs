//! The report's files: a FIFO as results.json is refused at once, and the
//! page and summary are written without following a symlink planted under
//! their names.

mod common;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use nettune_report::{read_results, write_dir};

/// Run `f` on a thread; a hang (the bug) fails the test instead of blocking
/// the suite: after the wait, `unblock` opens the FIFO's other end.
fn no_hang<T: Send + 'static>(
    fifo: &Path,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
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
    assert!(msg.contains("results.json") && msg.contains("FIFO"), "{msg}");
}

fn mkfifo(p: &Path) {
    let status = std::process::Command::new("mkfifo").arg(p).status().unwrap();
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
