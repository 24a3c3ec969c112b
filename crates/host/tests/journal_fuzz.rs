//! Fuzzing the journal reader and rollback with proptest (issue 7): arbitrary
//! bytes and mutated valid journals never panic and are read within the cap;
//! and whatever targets a journal with valid checksums names (the checksum is
//! no secret), rollback touches nothing outside the root and the state
//! directory. Case counts are small so this runs in a few seconds.

#![allow(clippy::unwrap_used)]

use model::plan::{CreatedKind, EthtoolGroup, NetnsScope, Plan, PlanOptions, Target, ValueFormat};
use model::snapshot::Fnv64;
use nettune_host::apply::{self, Knobs, RollbackError};
use nettune_host::journal::{EndStatus, JournalError, Record, StateDir, MAX_JOURNAL};
use nettune_host::Root;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn checksum(json: &str) -> String {
    let mut h = Fnv64::new();
    h.write(json.as_bytes());
    format!("{:016x}", h.finish())
}

fn line(r: &Record) -> String {
    let json = serde_json::to_string(r).unwrap();
    format!("{} {json}\n", checksum(&json))
}

fn begin() -> Record {
    Record::Begin {
        generation: 1,
        at: 1_795_460_068,
        profile: "throughput".into(),
        fingerprint: "f".into(),
        root: "/".into(),
    }
}

/// A valid journal's text: begin, a few befores, done, end.
fn valid_journal() -> String {
    let mut t = line(&begin());
    for (seq, (path, orig)) in [
        ("/proc/sys/net/core/rmem_max", "212992\n"),
        ("/sys/class/net/eth0/queues/rx-0/rps_cpus", "0\n"),
    ]
    .into_iter()
    .enumerate()
    {
        let seq = u32::try_from(seq).unwrap();
        t.push_str(&line(&Record::Before {
            seq,
            target: Target::File {
                path: path.into(),
                format: ValueFormat::Text,
            },
            knob: "k".into(),
            original: Some(orig.into()),
            intended: "1".into(),
            queue: None,
        }));
        t.push_str(&line(&Record::Done { seq }));
    }
    t.push_str(&line(&Record::End {
        status: EndStatus::Applied,
        at: 1_795_460_069,
        error: None,
    }));
    t
}

fn write_journal(state: &Path, bytes: &[u8]) {
    let d = state.join("generations/000001");
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("journal.log"), bytes).unwrap();
}

/// Re-checksum every line so a mutation reaches the JSON decoder.
fn rechecksum(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            let body = l.strip_suffix('\n').unwrap_or(l);
            let json = body.split_once(' ').map_or(body, |(_, j)| j);
            let nl = if l.ends_with('\n') { "\n" } else { "" };
            format!("{} {json}{nl}", checksum(json))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let t = tempfile::tempdir().unwrap();
        write_journal(t.path(), &bytes);
        let sd = StateDir::new(t.path());
        let _ = sd.load(1);
        let _ = sd.load_all();
    }

    #[test]
    fn mutated_valid_journals_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..8),
        fix_sums in any::<bool>(),
    ) {
        let mut b = valid_journal().into_bytes();
        for (at, byte, op) in edits {
            if b.is_empty() {
                break;
            }
            let i = at.index(b.len());
            match op {
                0 => b[i] = byte,
                1 => { b.remove(i); }
                2 => b.insert(i, byte),
                _ => b.truncate(i),
            }
        }
        let text = String::from_utf8_lossy(&b).into_owned();
        let text = if fix_sums { rechecksum(&text) } else { text };
        let t = tempfile::tempdir().unwrap();
        write_journal(t.path(), text.as_bytes());
        let sd = StateDir::new(t.path());
        if let Ok(g) = sd.load(1) {
            let starts_with_begin = matches!(g.records.first(), Some(Record::Begin { .. }));
            prop_assert!(starts_with_begin);
            let _ = g.ended();
            let _ = g.finished();
        }
    }
}

// ---- targets a journal may name ---------------------------------------------

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("e1000e".to_string()),
        Just("eth0".to_string()),
        Just("..".to_string()),
        Just("../../outside/x".to_string()),
        Just("/../outside/y".to_string()),
        "[a-zA-Z0-9_./-]{0,12}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/proc/sys/net/core/rmem_max".to_string()),
        Just("/proc/sys/../../outside/victim".to_string()),
        Just("/../outside/victim".to_string()),
        Just("/link/victim".to_string()),
        Just("/rel/victim".to_string()),
        Just("/proc/sys/link/victim".to_string()),
        Just("/etc/nettune/plan.json".to_string()),
        Just("/etc/systemd/system/multi-user.target.wants/nettune.service".to_string()),
        Just("/etc".to_string()),
        Just("/outside/victim".to_string()),
        "(/(\\.\\.|[a-z]{1,3}|link|rel|proc|sys|etc)){1,5}",
    ]
}

fn kind() -> impl Strategy<Value = CreatedKind> {
    prop_oneof![
        Just(CreatedKind::File),
        Just(CreatedKind::Dir),
        Just(CreatedKind::Symlink)
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        path().prop_map(|path| Target::File {
            path,
            format: ValueFormat::Text
        }),
        (path(), kind()).prop_map(|(path, what)| Target::Created { path, what }),
        (name(), name()).prop_map(|(module, param)| Target::ModuleParam { module, param }),
        (name(), name()).prop_map(|(iface, attr)| Target::Ethtool {
            iface,
            group: EthtoolGroup::Rings,
            attr
        }),
        (any::<u32>(), name()).prop_map(|(irq, iface)| Target::IrqAffinity { irq, iface }),
        name().prop_map(|name| Target::Service { name }),
    ]
}

fn original() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("pwned\n".to_string())),
        Just(Some("/outside/victim".to_string())),
        Just(Some(
            "options e1000e x=1\ninstall e1000e /bin/sh\n".to_string()
        )),
    ]
}

/// Every file under `dir` with its bytes (links as their target).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let v = if m.file_type().is_symlink() {
                fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if m.is_dir() {
                stack.push(p.clone());
                b"<dir>".to_vec()
            } else {
                fs::read(&p).unwrap()
            };
            out.insert(p, v);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A journal with valid checksums naming arbitrary targets: rollback
    /// either refuses it before touching anything, or touches only the root
    /// and the state directory; a target that would leave the root is always
    /// refused.
    #[test]
    fn rollback_of_any_journal_stays_inside_the_root(
        records in proptest::collection::vec((target(), original()), 1..6),
        force in any::<bool>(),
    ) {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("root");
        let outside = t.path().join("outside");
        fs::create_dir_all(r.join("proc/sys/net/core")).unwrap();
        fs::create_dir_all(r.join("etc/nettune")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(r.join("proc/sys/net/core/rmem_max"), "4194304\n").unwrap();
        fs::write(r.join("etc/nettune/plan.json"), "{}\n").unwrap();
        fs::write(outside.join("victim"), "keep\n").unwrap();
        std::os::unix::fs::symlink(&outside, r.join("link")).unwrap();
        std::os::unix::fs::symlink("../../outside", r.join("proc/sys/link")).unwrap();
        std::os::unix::fs::symlink("proc/sys/net", r.join("rel")).unwrap();
        let state = StateDir::new(t.path().join("state"));
        let mut w = state.begin(&Plan {
            schema_version: 1,
            profile: "t".into(),
            profile_toml: None,
            fingerprint: "f".into(),
            hostname: None,
            options: PlanOptions::default(),
            scope: NetnsScope::Init,
            changes: vec![],
            notes: vec![],
        }, "/").unwrap();
        for (seq, (target, original)) in records.iter().enumerate() {
            w.append(&Record::Before {
                seq: u32::try_from(seq).unwrap(),
                target: target.clone(),
                knob: "k".into(),
                original: original.clone(),
                intended: "1".into(),
                queue: None,
            }).unwrap();
        }
        drop(w);
        let outside_before = snapshot(&outside);
        let root = Root::new(&r);
        let k = Knobs::fixture(&root, state.path().join("modprobe.d"));
        let res = apply::rollback(&k, &state, None, force);
        prop_assert_eq!(&snapshot(&outside), &outside_before, "{:?}", res.as_ref().err());
        let mut top: Vec<String> = fs::read_dir(t.path()).unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        prop_assert_eq!(top, vec!["outside", "root", "state"]);
        // Any target with `..` or leading out through a link is refused
        // before anything is restored.
        let leaves = records.iter().any(|(t, _)| {
            let s = serde_json::to_string(t).unwrap();
            s.contains("..") || s.contains("/link/") || s.contains("/outside/")
        });
        if leaves {
            let refused = matches!(res, Err(RollbackError::Refused { .. }))
                // a path through a link is refused when it is restored
                || matches!(&res, Err(RollbackError::Partial { .. }))
                || matches!(&res, Ok(rep) if !rep.unrestored.is_empty());
            prop_assert!(refused, "{:?} -> {:?}", records, res.as_ref().map(|r| &r.rolled_back));
        }
    }
}

#[test]
fn a_journal_over_the_cap_is_not_read() {
    let t = tempfile::tempdir().unwrap();
    write_journal(t.path(), b"");
    let f = fs::OpenOptions::new()
        .write(true)
        .open(t.path().join("generations/000001/journal.log"))
        .unwrap();
    f.set_len(MAX_JOURNAL + 1).unwrap();
    let e = StateDir::new(t.path()).load(1).unwrap_err();
    assert!(matches!(e, JournalError::Read(_)), "{e}");
    assert!(e.to_string().contains("larger than 16777216 bytes"), "{e}");
}

#[test]
fn a_fifo_in_place_of_the_journal_does_not_block() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("generations/000001");
    fs::create_dir_all(&d).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        d.join("journal.log"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let e = StateDir::new(t.path()).load(1).unwrap_err();
    assert!(e.to_string().contains("FIFO"), "{e}");
}
