//! Capturing fixture trees and recording and reading samples.

use super::samples::record_sample;
use super::*;
use crate::ethtool::FixtureEthtool;
use crate::sampler::{Sampler, SAMPLER_FILES};
use std::time::Duration;

fn testdata(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/sampler/testdata/kvm-6.18-iperf3")
        .join(set)
}

/// A source root: a recorded counter set, one NIC `ens5` with a
/// `device` link and 1 RX queue, and its driver counters.
fn source(set: &str, pps_exceeded: u64) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    for f in SAMPLER_FILES {
        let from = testdata(set).join(f.trim_start_matches('/'));
        if from.exists() {
            let to = r.join(f.trim_start_matches('/'));
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(from, to).unwrap();
        }
    }
    let dev = r.join("sys/devices/pci0000:00/0000:00:05.0");
    fs::create_dir_all(dev.join("net/ens5/queues/rx-0")).unwrap();
    fs::create_dir_all(r.join("sys/class/net")).unwrap();
    std::os::unix::fs::symlink(
        "../../devices/pci0000:00/0000:00:05.0/net/ens5",
        r.join("sys/class/net/ens5"),
    )
    .unwrap();
    std::os::unix::fs::symlink("../../../0000:00:05.0", dev.join("net/ens5/device")).unwrap();
    fs::create_dir_all(r.join("ethtool")).unwrap();
    fs::write(
        r.join("ethtool/ens5.json"),
        format!(
            r#"{{"stats": {{"status": "ok", "value": {{"driver": {{"pps_allowance_exceeded": {pps_exceeded}, "queue_0_rx_cnt": 10}}}}}}}}"#
        ),
    )
    .unwrap();
    t
}

#[test]
fn samples_read_back_as_the_sampler_reads_them() {
    let src = source("a", 5);
    let root = Root::new(src.path());
    let out = tempfile::tempdir().unwrap();
    let eth = FixtureEthtool::new(&root);
    let rep =
        capture_samples(&root, out.path(), &eth, 3, Duration::from_millis(100), true).unwrap();
    assert_eq!(
        (rep.samples, rep.nic_ifaces.as_slice()),
        (3, &["ens5".to_string()][..])
    );
    // Replaying needs the capture's sys/ for the device map: copy it.
    capture_from(&root, out.path(), &eth).unwrap();
    let got = read_samples(&Root::new(out.path())).unwrap();
    assert_eq!(got.len(), 3);
    let live = Sampler::new(root.clone())
        .with_nic_stats(&[])
        .sample()
        .unwrap();
    for s in &got {
        assert_eq!(s.stat, live.stat);
        assert_eq!(s.softirqs, live.softirqs);
        assert_eq!(s.interrupts, live.interrupts);
        assert_eq!(s.netdev, live.netdev);
        assert_eq!(s.softnet, live.softnet);
        assert_eq!(s.counters, live.counters);
        assert_eq!(s.missing, live.missing);
        assert_eq!(s.nic, live.nic);
        assert_eq!(s.devices, live.devices);
        assert_eq!(s.rx_queue_counts, live.rx_queue_counts);
    }
    assert_eq!(
        got[0].devices.get("0000:00:05.0").map(String::as_str),
        Some("ens5")
    );
    // Recorded times, about 100 ms apart.
    let gap = got[1].at.0 - got[0].at.0;
    assert!((80_000_000..2_000_000_000).contains(&gap), "{gap}");
}

#[test]
fn rates_from_recorded_samples() {
    // Two samples recorded from two states of a host: the interval's
    // deltas come out of the capture as they would live.
    let (a, b) = (source("a", 5), source("b", 905));
    let out = tempfile::tempdir().unwrap();
    let base = out.path().join(SAMPLES_DIR);
    let ifaces = ["ens5".to_string()];
    let mut entries = Vec::new();
    for (k, src) in [&a, &b].into_iter().enumerate() {
        let root = Root::new(src.path());
        let (at, _) = record_sample(
            &root,
            &OutDir::create(&base.join(format!("{k:04}"))).unwrap(),
            &FixtureEthtool::new(&root),
            &ifaces,
        )
        .unwrap();
        entries.push(SampleEntry {
            dir: format!("{k:04}"),
            at,
        });
    }
    // Exactly two seconds apart, so the rates are exact.
    entries[1].at = entries[0].at + 2_000_000_000;
    let index = SamplesIndex {
        schema_version: 1,
        interval_ns: 2_000_000_000,
        samples: entries,
    };
    fs::write(
        base.join("index.json"),
        serde_json::to_string(&index).unwrap(),
    )
    .unwrap();
    let s = read_samples(&Root::new(out.path())).unwrap();
    let d = s[1].delta(&s[0]);
    assert_eq!(d.nic_counters["ens5"]["pps_allowance_exceeded"], 900);
    let want = Sampler::new(Root::new(testdata("b")))
        .sample()
        .unwrap()
        .delta(&Sampler::new(Root::new(testdata("a"))).sample().unwrap());
    assert_eq!(d.ifaces, {
        let mut w = want.ifaces.clone();
        for i in &mut w {
            // want's elapsed differs: compare counts, recompute rates.
            i.rx_pps = i.rx_packets.0 as f64 / 2.0;
            i.tx_pps = i.tx_packets.0 as f64 / 2.0;
            i.rx_bps = i.rx_bytes.to_bits().0 as f64 / 2.0;
            i.tx_bps = i.tx_bytes.to_bits().0 as f64 / 2.0;
            i.rx_drop_per_s = i.rx_drop as f64 / 2.0;
            i.tx_drop_per_s = i.tx_drop as f64 / 2.0;
        }
        w
    });
    assert_eq!(d.counters, want.counters);
}

#[test]
fn bad_sampling_and_bad_indexes_are_one_line_errors() {
    for (n, ms) in [
        (0, 1000),
        (MAX_SAMPLES + 1, 1000),
        (2, 0),
        (2, 50),
        (2, 601_000),
        (3600, 10_000),
    ] {
        let e = check_sampling(n, Duration::from_millis(ms))
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n') && e.starts_with("--"), "{e}");
    }
    assert!(check_sampling(5, Duration::from_secs(1)).is_ok());
    let out = tempfile::tempdir().unwrap();
    let root = Root::new(out.path());
    assert!(read_samples(&root).unwrap().is_empty());
    fs::create_dir_all(out.path().join(SAMPLES_DIR)).unwrap();
    let idx = out.path().join(SAMPLES_DIR).join("index.json");
    for bad in [
        "{",
        r#"{"schema_version": 9, "interval_ns": 1, "samples": []}"#,
        r#"{"schema_version": 1, "interval_ns": 1, "samples": [{"dir": "../x", "at": 1}]}"#,
        r#"{"schema_version": 1, "interval_ns": 1, "samples": [{"dir": "a", "at": 5}, {"dir": "b", "at": 1}]}"#,
        r#"{"schema_version": 1, "interval_ns": 1, "samples": [{"dir": "0000", "at": 1}]}"#,
    ] {
        fs::write(&idx, bad).unwrap();
        let e = read_samples(&root).unwrap_err().to_string();
        assert!(e.starts_with("samples/"), "{bad}: {e}");
    }
}

#[test]
fn one_sample_listed_3600_times_is_read_once() {
    let src = source("a", 5);
    let root = Root::new(src.path());
    let out = tempfile::tempdir().unwrap();
    let eth = FixtureEthtool::new(&root);
    capture_samples(&root, out.path(), &eth, 1, Duration::from_secs(1), false).unwrap();
    let entries: Vec<SampleEntry> = (0..MAX_SAMPLES)
        .map(|k| SampleEntry {
            dir: "0000".into(),
            at: u64::from(k),
        })
        .collect();
    let index = SamplesIndex {
        schema_version: 1,
        interval_ns: 1,
        samples: entries,
    };
    fs::write(
        out.path().join(SAMPLES_DIR).join("index.json"),
        serde_json::to_string(&index).unwrap(),
    )
    .unwrap();
    let capture = Root::new(out.path());
    assert_eq!(read_samples(&capture).unwrap().len(), 1);
    // Streaming: the consumer is called once per distinct sample.
    let mut calls = 0;
    let n = for_each_sample(&capture, |_| {
        calls += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!((n, calls), (1, 1));
}

mod fuzz {
    use super::super::*;
    use proptest::prelude::*;

    fn entry() -> impl Strategy<Value = (String, u64)> {
        (
            prop_oneof![
                Just("0000".to_string()),
                Just("0001".to_string()),
                Just("0002".to_string()),
                "[a-z0-9_./-]{0,20}",
            ],
            prop_oneof![0u64..10, any::<u64>()],
        )
    }

    fn index_json(entries: &[(String, u64)], schema: u32) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema_version": schema,
            "interval_ns": 1_000_000_000u64,
            "samples": entries
                .iter()
                .map(|(d, a)| serde_json::json!({"dir": d, "at": a}))
                .collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    fn check(bytes: &[u8]) {
        let shown = Path::new("samples/index.json");
        if let Ok(ix) = parse_index(bytes, shown) {
            assert!(ix.samples.len() <= MAX_SAMPLES as usize);
            let mut dirs: Vec<&str> = ix.samples.iter().map(|e| e.dir.as_str()).collect();
            dirs.sort_unstable();
            let before = dirs.len();
            dirs.dedup();
            assert_eq!(dirs.len(), before, "duplicates kept");
            assert!(ix.samples.windows(2).all(|w| w[0].at <= w[1].at));
            assert!(ix
                .samples
                .iter()
                .all(|e| !e.dir.contains('/') && e.dir != ".."));
        } else if let Err(e) = parse_index(bytes, shown) {
            assert!(e.to_string().starts_with("samples/index.json"), "{e}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            check(&bytes);
        }

        #[test]
        fn mutated_indexes_are_bounded_and_deduplicated(
            entries in proptest::collection::vec(entry(), 0..40),
            schema in prop_oneof![Just(1u32), any::<u32>()],
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            cut in proptest::option::of(any::<usize>()),
        ) {
            let mut bytes = index_json(&entries, schema);
            check(&bytes);
            for (at, b) in flips {
                let n = bytes.len();
                if n > 0 {
                    bytes[at % n] = b;
                }
            }
            if let Some(c) = cut {
                let n = bytes.len().max(1);
                bytes.truncate(c % n);
            }
            check(&bytes);
        }

        #[test]
        fn duplicates_collapse_to_the_first(n in 1usize..=MAX_SAMPLES as usize, k in 1usize..4) {
            let entries: Vec<(String, u64)> = (0..n)
                .map(|i| (format!("{:04}", i % k), i as u64))
                .collect();
            let ix = parse_index(&index_json(&entries, 1), Path::new("i")).unwrap();
            prop_assert_eq!(ix.samples.len(), n.min(k));
            prop_assert!(ix.samples.iter().enumerate().all(|(i, e)| e.at == i as u64));
        }

        #[test]
        fn too_many_entries_are_refused(extra in 1usize..50) {
            let entries: Vec<(String, u64)> = (0..MAX_SAMPLES as usize + extra)
                .map(|i| ("0000".to_string(), i as u64))
                .collect();
            prop_assert!(parse_index(&index_json(&entries, 1), Path::new("i")).is_err());
        }
    }
}

/// Every regular file and directory under `dir` (relative), links not
/// followed and not listed.
fn tree(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for e in fs::read_dir(dir.join(&rel)).unwrap() {
            let e = e.unwrap();
            let r = rel.join(e.file_name());
            let t = e.file_type().unwrap();
            if t.is_dir() {
                dirs.push(r.clone());
                todo.push(r);
            } else if t.is_file() {
                files.push(r);
            }
        }
    }
    (files, dirs)
}

/// A whole capture (files, netlink fixtures, ethtool, LABEL, samples).
fn capture_all(root: &Root, out: &Path) -> Result<(), HostError> {
    let eth = FixtureEthtool::new(root);
    capture_from(root, out, &eth)?;
    capture_samples(root, out, &eth, 2, Duration::from_millis(100), true)?;
    Ok(())
}

/// Issue 35: links planted under every output a capture writes. A link at
/// a file's name (to a victim, or dangling) is replaced, never written
/// through; a link at a directory's name is refused, and nothing lands in
/// its target.
#[test]
fn planted_links_under_a_capture_are_never_written_through() {
    let src = source("a", 5);
    let root = Root::new(src.path());
    let probe = tempfile::tempdir().unwrap();
    capture_all(&root, probe.path()).unwrap();
    let (files, dirs) = tree(probe.path());
    assert!(files.iter().any(|f| f == Path::new("LABEL")));
    assert!(files.iter().any(|f| f.starts_with("samples/0000")));
    assert!(files.iter().any(|f| f == Path::new("samples/index.json")));

    // Links to victims at every file name, and dangling links.
    for dangling in [false, true] {
        let out = tempfile::tempdir().unwrap();
        let victims = tempfile::tempdir().unwrap();
        for (k, f) in files.iter().enumerate() {
            let v = victims.path().join(format!("v{k}"));
            if !dangling {
                fs::write(&v, "precious").unwrap();
            }
            let at = out.path().join(f);
            fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&v, &at).unwrap();
        }
        capture_all(&root, out.path()).unwrap();
        for (k, f) in files.iter().enumerate() {
            let v = victims.path().join(format!("v{k}"));
            if dangling {
                assert!(
                    !v.exists(),
                    "{} created through {}",
                    v.display(),
                    f.display()
                );
            } else {
                assert_eq!(
                    fs::read_to_string(&v).unwrap(),
                    "precious",
                    "{}",
                    f.display()
                );
            }
            let m = fs::symlink_metadata(out.path().join(f)).unwrap();
            assert!(m.is_file(), "{} is still a link", f.display());
        }
    }

    // A link at each directory's name: refused, its target untouched.
    for d in &dirs {
        let out = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        let at = out.path().join(d);
        if let Some(p) = at.parent() {
            fs::create_dir_all(p).unwrap();
        }
        std::os::unix::fs::symlink(victim.path(), &at).unwrap();
        let r = capture_all(&root, out.path());
        assert!(
            matches!(r, Err(HostError::Refused { .. })),
            "{}: {r:?}",
            d.display()
        );
        assert_eq!(
            fs::read_dir(victim.path()).unwrap().count(),
            0,
            "{} written through",
            d.display()
        );
    }
}
