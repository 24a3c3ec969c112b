//! `nettune capture --samples N --interval S` on the live host, read back by
//! `nettune stat --root` (the recorded intervals) and `read_samples`; bad
//! counts and intervals are one-line errors.

#![allow(clippy::unwrap_used)]

use std::process::Command;

fn nettune(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn live_capture_with_samples_replays_its_intervals() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("cap");
    let dir = out.to_str().unwrap();
    let o = nettune(&[
        "capture",
        "--out",
        dir,
        "--samples",
        "3",
        "--interval",
        "0.2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("recorded 3 samples 0.2 s apart"), "{text}");
    let samples = host::capture::read_samples(&host::Root::new(&out)).unwrap();
    assert_eq!(samples.len(), 3);
    for w in samples.windows(2) {
        let gap = w[1].at.0 - w[0].at.0;
        // Due 200 ms apart; a loaded machine may be late, never early by much.
        assert!((150_000_000..5_000_000_000).contains(&gap), "{gap}");
    }
    let o = nettune(&["stat", "--root", dir, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for (l, w) in lines.iter().zip(samples.windows(2)) {
        assert_eq!(l["schema_version"], 1);
        assert_eq!(l["elapsed"], w[1].at.0 - w[0].at.0);
    }
    // The driver counters were recorded (capture and each sample) and replay.
    if Command::new("ethtool").arg("--version").output().is_ok() {
        let snap = host::read_snapshot(&host::Root::new(&out));
        let with_stats: Vec<&str> = snap
            .interfaces
            .iter()
            .filter(|i| {
                i.ethtool
                    .stats
                    .value()
                    .is_some_and(|s| !s.driver.is_empty())
            })
            .map(|i| i.name.as_str())
            .collect();
        let live = host::read_snapshot(&host::Root::live());
        let live_with: Vec<&str> = live
            .interfaces
            .iter()
            .filter(|i| {
                i.ethtool
                    .stats
                    .value()
                    .is_some_and(|s| !s.driver.is_empty())
            })
            .map(|i| i.name.as_str())
            .collect();
        assert_eq!(with_stats, live_with);
        for i in &with_stats {
            assert!(
                samples[0].nic.contains_key(*i),
                "{i}: {:?}",
                samples[0].nic.keys()
            );
        }
    }
    let o = nettune(&["stat", "--root", dir, "-c", "1"]);
    let human = String::from_utf8(o.stdout).unwrap();
    assert_eq!(human.matches("--- interval").count(), 1, "{human}");
}

#[test]
fn bad_sample_flags_are_one_line_errors() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("cap");
    let dir = dir.to_str().unwrap();
    for (args, want) in [
        (vec!["--samples", "0"], "at least 1"),
        (vec!["--samples=-3"], "not a whole number"),
        (vec!["--samples", "100000"], "maximum of 3600"),
        (vec!["--samples", "2", "--interval", "0"], "0.1 to 600"),
        (vec!["--samples", "2", "--interval", "nan"], "0.1 to 600"),
        (
            vec!["--samples", "3600", "--interval", "600"],
            "more than 3600 s",
        ),
        (vec!["--interval", "1"], "--samples"),
    ] {
        let mut a = vec!["capture", "--out", dir];
        a.extend(args.iter().copied());
        let o = nettune(&a);
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(
            !std::path::Path::new(dir).exists(),
            "{args:?} wrote before checking"
        );
    }
}

#[test]
fn recorded_fixture_gives_exact_rates() {
    // tests/fixtures/nic-ena-allowance (samples-make.py): 3 samples 1 s apart.
    let root = host::Root::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/nic-ena-allowance"),
    );
    let s = host::capture::read_samples(&root).unwrap();
    assert_eq!(s.len(), 3);
    for w in s.windows(2) {
        let d = w[1].delta(&w[0]);
        assert_eq!(d.elapsed.0, 1_000_000_000);
        assert_eq!(d.nic_counters["ens5"]["pps_allowance_exceeded"], 1840);
        assert!(!d.nic_counters["ens5"].contains_key("bw_in_allowance_exceeded"));
        let rx: Vec<_> = d
            .queues
            .iter()
            .filter(|q| q.dir == model::parse::ethtool_stats::QueueDir::Rx)
            .map(|q| {
                (
                    q.index,
                    q.packets_per_s,
                    q.irq.map(|i| i.0),
                    q.packets_per_interrupt,
                )
            })
            .collect();
        assert_eq!(
            rx,
            (0..4)
                .map(|i| (i, Some(100_000.0), Some(27 + i), Some(50.0)))
                .collect::<Vec<_>>()
        );
        assert_eq!(d.iface("ens5").unwrap().rx_pps, 400_000.0);
    }
}

#[test]
fn stat_on_a_static_tree_without_samples_says_rates_need_samples() {
    // A /proc + /sys tree copied from elsewhere (prometheus node_exporter's
    // fixtures are such a tree: no LABEL, no samples) never changes: stat
    // says rates need `capture --samples` and exits 1 instead of printing
    // zeros for ever.
    let t = tempfile::tempdir().unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/nic-ena");
    for f in [
        "proc/stat",
        "proc/net/dev",
        "proc/softirqs",
        "proc/interrupts",
    ] {
        let to = t.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        if std::path::Path::new(src).join(f).is_file() {
            std::fs::copy(std::path::Path::new(src).join(f), &to).unwrap();
        }
    }
    assert!(!t.path().join("LABEL").exists());
    let o = nettune(&[
        "stat",
        "--root",
        t.path().to_str().unwrap(),
        "-c",
        "2",
        "0.1",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("capture --samples"), "{err}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
