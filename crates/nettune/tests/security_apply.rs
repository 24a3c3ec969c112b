//! Issue 7, host side: apply, rollback, persist and the journal stay inside
//! `--root`; a plan file is applied exactly; special files never hang a read;
//! rollback always finishes with `--force`; applies are serialized by a lock;
//! and the messages of capture, apply, verify and history say the right thing.
//!
//! Every test works on a temp copy of a fixture; "outside" files are siblings
//! of the copy inside the same temp dir.

#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod fixture_copy;
use fixture_copy::{assert_same, bin, copy, nettune, ok, text, tree, Copy};

fn plan_value(root: &Path, profile: &str) -> Value {
    let o = bin()
        .args(["plan", "--profile", profile, "--json", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Write `plan` next to the root and return its path.
fn plan_file(c: &Copy, plan: &Value) -> PathBuf {
    let p = c.outside("plan.json");
    std::fs::write(&p, serde_json::to_string_pretty(plan).unwrap()).unwrap();
    p
}

/// The plan of `c` (throughput) with its changes replaced by `changes`.
fn plan_with(c: &Copy, changes: Vec<Value>) -> PathBuf {
    let mut plan = plan_value(&c.root, "throughput");
    plan["changes"] = Value::Array(changes);
    plan_file(c, &plan)
}

fn change(target: Value, after: &str) -> Value {
    json!({
        "phase": "modules",
        "knob": "hand-edited",
        "target": target,
        "before": null,
        "after": after,
        "rule": "experiment",
        "reason": "x",
        "source": "x"
    })
}

/// The journal's line checksum (not a secret: anyone can recompute it).
fn fnv64(s: &str) -> String {
    let mut h = model::snapshot::Fnv64::new();
    h.write(s.as_bytes());
    format!("{:016x}", h.finish())
}

/// Append a correctly checksummed record to generation 1's journal.
fn append_record(c: &Copy, record: Value) {
    let j = c.state.join("generations/000001/journal.log");
    let mut text = std::fs::read_to_string(&j).unwrap();
    let line = serde_json::to_string(&record).unwrap();
    text.push_str(&format!("{} {line}\n", fnv64(&line)));
    std::fs::write(&j, text).unwrap();
}

fn journal_befores(c: &Copy, generation: u32) -> usize {
    let j = c
        .state
        .join(format!("generations/{generation:06}/journal.log"));
    std::fs::read_to_string(j)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"op\":\"before\""))
        .count()
}

// ---- 1. confinement to --root -------------------------------------------

#[test]
fn created_path_with_dotdot_in_a_plan_is_refused_and_nothing_outside_is_written() {
    let c = copy("c4-8xlarge");
    let victim = c.outside("outside.txt");
    let plan = plan_with(
        &c,
        vec![change(
            json!({"kind": "created", "path": "/../outside.txt", "what": "file"}),
            "pwned\n",
        )],
    );
    let before = tree(&c.root);
    let o = nettune(&c, &["apply", "--plan", plan.to_str().unwrap(), "--yes"]);
    assert!(!victim.exists(), "apply wrote outside the root");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("/../outside.txt"), "{}", text(&o));
    assert_same(&before, &tree(&c.root));
}

#[test]
fn rollback_refuses_a_journal_that_names_a_path_outside_the_root() {
    let c = copy("c4-8xlarge");
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let victim = c.outside("victim.txt");
    std::fs::write(&victim, "keep me\n").unwrap();
    append_record(
        &c,
        json!({"op": "before", "seq": 999, "knob": "x",
               "target": {"kind": "created", "path": "/../victim.txt", "what": "file"},
               "original": null, "intended": "x"}),
    );
    let mid = tree(&c.root);
    let o = nettune(&c, &["rollback"]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("/../victim.txt"), "{}", text(&o));
    // Refused before anything was touched, like a corrupt journal.
    assert_same(&mid, &tree(&c.root));
}

#[test]
fn rollback_refuses_a_journal_that_names_a_file_nettune_never_writes() {
    let c = copy("c4-8xlarge");
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    // On a live root this would be /LABEL; any non-kernel file stands for
    // /etc/passwd here.
    append_record(
        &c,
        json!({"op": "before", "seq": 999, "knob": "x",
               "target": {"kind": "file", "path": "/LABEL", "format": "text"},
               "original": "pwned\n", "intended": "x"}),
    );
    let label = std::fs::read(c.root.join("LABEL")).unwrap();
    let o = nettune(&c, &["rollback"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("/LABEL"), "{}", text(&o));
    assert_eq!(std::fs::read(c.root.join("LABEL")).unwrap(), label);
}

#[test]
fn module_and_parameter_names_cannot_leave_the_snippet_directory() {
    for (module, param, escaped) in [
        ("/../../../x", "p", "x-p.conf"),
        ("e1000e", "../../../y", "y.conf"),
    ] {
        let c = copy("c4-8xlarge");
        let plan = plan_with(
            &c,
            vec![change(
                json!({"kind": "module_param", "module": module, "param": param}),
                "1",
            )],
        );
        let o = nettune(&c, &["apply", "--plan", plan.to_str().unwrap(), "--yes"]);
        let out = text(&o);
        assert!(!c.outside(escaped).exists(), "{module} {param}: {out}");
        assert!(!c.state.join(escaped).exists(), "{module} {param}: {out}");
        assert!(!o.status.success(), "{out}");
        assert!(out.contains("not a valid name"), "{out}");
    }
}

#[test]
fn persist_refuses_an_etc_symlinked_out_of_the_root() {
    let c = copy("c4-8xlarge");
    let outside = c.outside("real-etc");
    std::fs::create_dir(&outside).unwrap();
    let _ = std::fs::remove_dir_all(c.root.join("etc"));
    std::os::unix::fs::symlink(&outside, c.root.join("etc")).unwrap();
    let before = tree(&c.root);
    let o = nettune(
        &c,
        &["apply", "--profile", "throughput", "--yes", "--persist"],
    );
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(written.is_empty(), "wrote outside: {written:?}");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("/etc"), "{}", text(&o));
    assert!(text(&o).contains("escapes the root"), "{}", text(&o));
    assert_same(&before, &tree(&c.root));
}

#[test]
fn default_state_dir_under_a_var_symlinked_out_of_the_root_is_refused() {
    let c = copy("c4-8xlarge");
    let outside = c.outside("real-var");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, c.root.join("var")).unwrap();
    let o = bin()
        .args(["apply", "--profile", "throughput", "--yes", "--root"])
        .arg(&c.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(written.is_empty(), "journal written outside: {written:?}");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("/var/lib/nettune"), "{}", text(&o));
}

// ---- 5. a plan file is applied exactly -------------------------------------

/// The tuner fixture with 8 of 64 combined channels, so plans raise them.
fn few_channels() -> Copy {
    let c = copy("tuner-two-socket-32c");
    let p = c.root.join("ethtool/ens1f0.json");
    let t = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, t.replace("\"combined\": 16", "\"combined\": 8")).unwrap();
    c
}

#[test]
fn a_plan_pruned_to_one_channel_change_applies_one_change() {
    let c = few_channels();
    let plan = plan_value(&c.root, "throughput");
    let channels: Vec<Value> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|ch| ch["phase"] == "channels")
        .cloned()
        .collect();
    assert_eq!(channels.len(), 1, "{plan}");
    let mut pruned = plan.clone();
    pruned["changes"] = Value::Array(channels);
    let f = plan_file(&c, &pruned);
    let rep: Value = serde_json::from_str(&ok(
        &c,
        &["apply", "--plan", f.to_str().unwrap(), "--yes", "--json"],
    ))
    .unwrap();
    assert_eq!(rep["changes"].as_array().unwrap().len(), 1, "{rep}");
    assert_eq!(journal_befores(&c, 1), 1);
}

#[test]
fn a_plan_with_later_changes_stops_after_the_channel_change_unless_replan() {
    let c = few_channels();
    let plan = plan_value(&c.root, "throughput");
    let n = plan["changes"].as_array().unwrap().len();
    assert!(n > 10, "{n}");
    let f = plan_file(&c, &plan);
    let o = nettune(&c, &["apply", "--plan", f.to_str().unwrap(), "--yes"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("stopped after the channel change") && out.contains("--replan"),
        "{out}"
    );
    assert_eq!(journal_befores(&c, 1), 1, "only the channel change");
    let h: Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert_eq!(h["generations"][0]["status"], "stopped");
    // The channels are now raised: a fresh plan has no channel change and the
    // next apply goes through.
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    ok(&c, &["rollback", "1"]);

    // With --replan the later phases are planned again from the plan's profile.
    let c = few_channels();
    let f = plan_file(&c, &plan_value(&c.root, "throughput"));
    let before = tree(&c.root);
    ok(
        &c,
        &["apply", "--plan", f.to_str().unwrap(), "--yes", "--replan"],
    );
    assert!(journal_befores(&c, 1) > 10);
    ok(&c, &["rollback"]);
    assert_same(&before, &tree(&c.root));
}

/// `apply --profile --persist` that raises channels re-plans the later phases
/// and still installs the boot unit (the re-plan used to drop it, with the
/// other changes planned before the channel change).
#[test]
fn persist_survives_the_replan_after_a_channel_change() {
    let c = few_channels();
    let before = tree(&c.root);
    let out = ok(
        &c,
        &["apply", "--profile", "throughput", "--yes", "--persist"],
    );
    assert!(out.contains("ethtool channels ens1f0 combined"), "{out}");
    let unit = c.root.join("etc/systemd/system/nettune.service");
    assert!(unit.exists(), "{out}");
    assert!(c.root.join("etc/nettune/plan.json").exists());
    assert!(std::fs::symlink_metadata(
        c.root
            .join("etc/systemd/system/multi-user.target.wants/nettune.service")
    )
    .is_ok());
    ok(&c, &["rollback"]);
    assert_same(&before, &tree(&c.root));
}

// ---- 8. special files ------------------------------------------------------

fn inspect_json_within(root: &Path, limit: Duration) -> Value {
    let mut child = bin()
        .args(["inspect", "--json", "--root"])
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("inspect did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn note(snap: &Value, path: &str) -> String {
    snap["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["path"] == path)
        .map(|n| n["message"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no note for {path}: {}", snap["notes"]))
}

#[test]
fn a_fifo_in_place_of_a_kernel_file_does_not_hang_inspect() {
    let c = copy("c4-8xlarge");
    let p = c.root.join("proc/interrupts");
    std::fs::remove_file(&p).unwrap();
    let st = Command::new("mkfifo").arg(&p).status().unwrap();
    assert!(st.success());
    let snap = inspect_json_within(&c.root, Duration::from_secs(30));
    let m = note(&snap, "/proc/interrupts");
    assert!(m.contains("not a regular file (FIFO)"), "{m}");
}

#[test]
fn a_too_large_kernel_file_is_not_read() {
    let c = copy("c4-8xlarge");
    let p = c.root.join("proc/interrupts");
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(17 << 20).unwrap(); // sparse
    drop(f);
    let snap = inspect_json_within(&c.root, Duration::from_secs(60));
    let m = note(&snap, "/proc/interrupts");
    assert!(m.contains("larger than 16777216 bytes"), "{m}");
}

// ---- 9. rollback always finishes -------------------------------------------

#[test]
fn rollback_with_a_vanished_knob_restores_the_rest_and_force_closes_it() {
    let c = copy("c4-8xlarge");
    let before = tree(&c.root);
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let gone = "sys/devices/pci0000:00/0000:00:03.0/net/eth0/queues/rx-1/rps_cpus";
    std::fs::remove_file(c.root.join(gone)).unwrap();
    let o = nettune(&c, &["rollback"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("rx-1/rps_cpus") && out.contains("not found") && out.contains("--force"),
        "{out}"
    );
    // Everything else is back.
    let mut want = before;
    want.remove(Path::new(gone));
    assert_same(&want, &tree(&c.root));
    let h: Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert!(
        h["generations"][0]["rolled_back_at"].is_null(),
        "still in force"
    );

    let out = ok(&c, &["rollback", "--force"]);
    assert!(
        out.contains("not restored") && out.contains("rx-1/rps_cpus"),
        "{out}"
    );
    let h: Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert!(h["generations"][0]["rolled_back_at"].is_u64(), "{h}");
    assert!(ok(&c, &["rollback"]).contains("Nothing to roll back"));
    assert_same(&want, &tree(&c.root));
}

// ---- 12. applies are serialized --------------------------------------------

#[test]
fn a_second_apply_or_a_rollback_during_an_apply_fails_at_once_naming_the_holder() {
    let c = copy("tuner-two-socket-32c");
    let before = tree(&c.root);
    let mut first = bin()
        .args(["apply", "--profile", "throughput", "--yes", "--root"])
        .arg(&c.root)
        .arg("--state-dir")
        .arg(&c.state)
        .env("NETTUNE_TEST_PAUSE_AFTER_WRITES", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(first.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("paused after 3 writes"), "{line}");
    let pid = first.id().to_string();
    for args in [
        &["apply", "--profile", "throughput", "--yes", "--force"][..],
        &["rollback"][..],
        &["rollback", "--force"][..],
    ] {
        let start = Instant::now();
        let o = nettune(&c, args);
        let out = text(&o);
        assert!(start.elapsed() < Duration::from_secs(20), "{args:?} waited");
        assert!(!o.status.success(), "{args:?}: {out}");
        assert!(
            out.contains("locked") && out.contains(&format!("pid {pid}")),
            "{args:?}: {out}"
        );
    }
    first.kill().unwrap();
    first.wait().unwrap();
    // The lock dies with its holder.
    ok(&c, &["rollback"]);
    assert_same(&before, &tree(&c.root));
}

// ---- 11. messages ----------------------------------------------------------

#[test]
fn capture_over_an_existing_file_says_not_a_directory_once() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("occupied");
    std::fs::write(&f, "x").unwrap();
    let o = bin().arg("capture").arg("--out").arg(&f).output().unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.matches("not a directory").count(), 1, "{e}");
    assert!(e.contains(f.to_str().unwrap()), "{e}");
}

#[test]
fn the_undo_hint_is_a_command_that_works_as_printed() {
    let c = copy("c4-8xlarge");
    // A state dir with a space: the hint must quote it.
    let state = c.outside("my state");
    let before = tree(&c.root);
    let o = bin()
        .args(["apply", "--profile", "throughput", "--yes", "--root"])
        .arg(&c.root)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let hint = out
        .lines()
        .find(|l| l.contains("Undo with"))
        .unwrap_or_else(|| panic!("{out}"));
    let cmd = hint
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no `command` in {hint}"));
    assert!(hint.trim_end().ends_with("`."), "{hint}");
    let rest = cmd
        .strip_prefix("nettune ")
        .unwrap_or_else(|| panic!("{cmd}"));
    assert!(rest.contains("--state-dir"), "{cmd}");
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("\"$NETTUNE\" {rest}"))
        .env("NETTUNE", env!("CARGO_BIN_EXE_nettune"))
        .status()
        .unwrap();
    assert!(st.success(), "{cmd}");
    assert_same(&before, &tree(&c.root));
}

#[test]
fn a_symlink_loop_is_named_as_one() {
    let c = copy("c4-8xlarge");
    let p = c.root.join("proc/interrupts");
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink("interrupts2", &p).unwrap();
    std::os::unix::fs::symlink("interrupts", c.root.join("proc/interrupts2")).unwrap();
    let snap = inspect_json_within(&c.root, Duration::from_secs(30));
    let m = note(&snap, "/proc/interrupts");
    assert!(m.contains("too many levels of symbolic links"), "{m}");
    assert!(!m.contains("escapes"), "{m}");
}

#[test]
fn verify_escapes_control_bytes_read_from_knob_files() {
    let c = copy("c4-8xlarge");
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    std::fs::write(
        c.root.join("sys/class/net/eth0/queues/rx-1/rps_cpus"),
        "\x1b[2J\x1b]0;owned\x07ff\n",
    )
    .unwrap();
    let o = nettune(&c, &["verify"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        !o.stdout.iter().any(|&b| b < 0x20 && b != b'\n'),
        "raw control bytes in: {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\\x1b[2J"), "{out}");
}

#[test]
fn history_shows_utc_times() {
    let c = copy("c4-8xlarge");
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    ok(&c, &["rollback"]);
    let out = ok(&c, &["history"]);
    let line = out.lines().nth(1).unwrap();
    let stamps: Vec<&str> = line
        .split("  ")
        .map(str::trim)
        .filter(|s| is_utc_stamp(s))
        .collect();
    assert_eq!(stamps.len(), 2, "applied and rolled back in UTC: {out}");
    let h: Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert!(h["generations"][0]["applied_at"].is_u64(), "{h}");
    assert!(
        is_utc_stamp(h["generations"][0]["applied_at_utc"].as_str().unwrap()),
        "{h}"
    );
    assert!(
        is_utc_stamp(h["generations"][0]["rolled_back_at_utc"].as_str().unwrap()),
        "{h}"
    );
}

/// `2026-11-23 18:54:28Z`
fn is_utc_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b' ',
            13 | 16 => c == b':',
            19 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}
