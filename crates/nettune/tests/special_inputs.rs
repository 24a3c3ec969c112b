//! Issue 35: a FIFO or device node handed as an input file is refused at
//! once, naming it, never read (a FIFO blocked the command, `/dev/zero`
//! was read until allocation failed).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run nettune with `args`; a run that does not end within a minute is
/// killed and fails the test (it blocked on the input).
fn run(args: &[&std::ffi::OsStr]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("nettune {args:?} blocked on its input");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

fn refused(o: &Output, named: &Path, what: &str) {
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{e}");
    assert!(e.contains(&named.display().to_string()), "{e}");
    assert!(e.contains(what), "{e}");
}

#[test]
fn fifo_and_device_inputs_are_refused_not_read() {
    let t = tempfile::tempdir().unwrap();
    let fifo_inv = t.path().join("hosts.toml");
    mkfifo(&fifo_inv);
    let zero_inv = t.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero_inv).unwrap();
    for inv in [&fifo_inv, &zero_inv] {
        let o = run(&[
            "fleet".as_ref(),
            "inspect".as_ref(),
            "--inventory".as_ref(),
            inv.as_os_str(),
        ]);
        refused(&o, inv, "not a regular file");
    }
    let plan = t.path().join("plan.json");
    mkfifo(&plan);
    let o = run(&[
        "fleet".as_ref(),
        "apply".as_ref(),
        "--inventory".as_ref(),
        fifo_inv.as_os_str(),
        "--plan".as_ref(),
        plan.as_os_str(),
    ]);
    refused(&o, &plan, "FIFO");
    let from = t.path().join("earlier");
    std::fs::create_dir(&from).unwrap();
    let results = from.join("results.json");
    mkfifo(&results);
    let o = run(&[
        "autotune".as_ref(),
        "--objective".as_ref(),
        "max-cps".as_ref(),
        "--test".as_ref(),
        "tcp-crr".as_ref(),
        "--from".as_ref(),
        from.as_os_str(),
    ]);
    refused(&o, &results, "FIFO");
}
