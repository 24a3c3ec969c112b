//! Confinement of apply, rollback and persist to the root, and reads that
//! cannot block or stream: the library-level checks behind issue 7's
//! defects 1 and 8 (the CLI-level tests are in `nettune/tests/security_apply.rs`).

#![allow(clippy::unwrap_used)]

use model::plan::{Change, CreatedKind, NetnsScope, Phase, Plan, PlanOptions, Target, ValueFormat};
use nettune_host::apply::{self, ApplyError, ApplyOptions, Knobs, RollbackError};
use nettune_host::journal::StateDir;
use nettune_host::{HostError, Root};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

struct Fx {
    t: tempfile::TempDir,
    root: Root,
}

impl Fx {
    fn dir(&self) -> &Path {
        self.root.dir()
    }
    fn outside(&self) -> PathBuf {
        self.t.path().join("outside")
    }
    fn state(&self) -> StateDir {
        StateDir::new(self.t.path().join("state"))
    }
}

/// `T/root` with one sysctl and an ethtool file, and `T/outside/` beside it.
fn fixture() -> Fx {
    let t = tempfile::tempdir().unwrap();
    let r = t.path().join("root");
    fs::create_dir_all(r.join("proc/sys/net/core")).unwrap();
    fs::create_dir_all(r.join("ethtool")).unwrap();
    fs::create_dir_all(t.path().join("outside")).unwrap();
    fs::write(r.join("proc/sys/net/core/rmem_max"), "212992\n").unwrap();
    fs::write(
        r.join("ethtool/eth0.json"),
        "{\"rings\": {\"status\": \"ok\", \"value\": {\"rx\": 512}}}\n",
    )
    .unwrap();
    Fx {
        root: Root::new(&r),
        t,
    }
}

fn knobs(fx: &Fx) -> Knobs {
    Knobs::fixture(&fx.root, fx.t.path().join("state/modprobe.d"))
}

fn plan(changes: Vec<Change>) -> Plan {
    Plan {
        schema_version: 1,
        profile: "t".into(),
        profile_toml: None,
        fingerprint: "f".into(),
        hostname: None,
        options: PlanOptions::default(),
        scope: NetnsScope::Init,
        changes,
        notes: vec![],
    }
}

fn change(target: Target, after: &str) -> Change {
    Change {
        phase: Phase::Sysctls,
        knob: "k".into(),
        target,
        before: None,
        after: after.into(),
        rule: model::plan::Origin::Experiment,
        reason: "t".into(),
        source: "t".into(),
    }
}

fn created(path: &str, what: CreatedKind) -> Target {
    Target::Created {
        path: path.into(),
        what,
    }
}

fn outside_entries(fx: &Fx) -> Vec<PathBuf> {
    fs::read_dir(fx.outside())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[test]
fn apply_refuses_every_target_that_leaves_the_root_and_writes_nothing() {
    let fx = fixture();
    let k = knobs(&fx);
    let bad = [
        created("/../outside/x", CreatedKind::File),
        created("/etc/../../outside/x", CreatedKind::File),
        created("/etc/shadow", CreatedKind::File),
        Target::File {
            path: "/proc/sys/../../../outside/x".into(),
            format: ValueFormat::Text,
        },
        Target::File {
            path: "/etc/passwd".into(),
            format: ValueFormat::Text,
        },
        Target::ModuleParam {
            module: "../../outside/x".into(),
            param: "p".into(),
        },
        Target::ModuleParam {
            module: "e1000e".into(),
            param: "a/../../../../outside/y".into(),
        },
        Target::Ethtool {
            iface: "../../outside/eth0".into(),
            group: model::plan::EthtoolGroup::Rings,
            attr: "rx".into(),
        },
        Target::Service {
            name: "sshd".into(),
        },
    ];
    for t in bad {
        let e = apply::apply(
            &k,
            &fx.state(),
            &plan(vec![change(t.clone(), "1")]),
            ApplyOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(e, ApplyError::Refused { .. }), "{t:?}: {e}");
        assert!(outside_entries(&fx).is_empty(), "{t:?}");
        // Knobs refuses on its own too (a re-planned change, a library caller).
        assert!(k.write(&t, "1").is_err(), "{t:?}");
        assert!(k.restore(&t, None).is_err(), "{t:?}");
        assert!(k.read_raw(&t).is_err(), "{t:?}");
    }
    assert!(
        !fx.t.path().join("state/generations").exists(),
        "no generation was started"
    );
}

#[test]
fn a_module_parameter_value_cannot_add_lines_to_the_snippet() {
    let fx = fixture();
    let k = knobs(&fx);
    let t = Target::ModuleParam {
        module: "e1000e".into(),
        param: "InterruptThrottleRate".into(),
    };
    let e = apply::apply(
        &k,
        &fx.state(),
        &plan(vec![change(t.clone(), "3\ninstall e1000e /bin/sh -c id")]),
        ApplyOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ApplyError::Refused { .. }), "{e}");
    apply::apply(
        &k,
        &fx.state(),
        &plan(vec![change(t, "1,1,1,1")]),
        ApplyOptions::default(),
    )
    .unwrap();
    let snip = fs::read_to_string(
        fx.t.path()
            .join("state/modprobe.d/nettune-e1000e-InterruptThrottleRate.conf"),
    )
    .unwrap();
    assert!(
        snip.ends_with("options e1000e InterruptThrottleRate=1,1,1,1\n"),
        "{snip}"
    );
}

#[test]
fn resolve_confined_refuses_links_that_leave_a_fixture_root() {
    let fx = fixture();
    let r = fx.dir();
    symlink(fx.outside(), r.join("abs")).unwrap();
    symlink("../../outside", r.join("proc/up")).unwrap();
    symlink("sys", r.join("loop1")).unwrap();
    fs::remove_dir_all(r.join("ethtool")).unwrap();
    symlink("loop2", r.join("loopa")).unwrap();
    symlink("loopa", r.join("loop2")).unwrap();
    symlink("proc/sys", r.join("rel")).unwrap();
    for (p, want) in [
        (
            "/abs/x",
            "escapes the root directory through the symlink /abs ->",
        ),
        (
            "/proc/up/x",
            "escapes the root directory through the symlink /proc/up -> ../../outside",
        ),
        ("/loopa/x", "too many levels of symbolic links"),
        ("/proc/../x", "holds `..`"),
        ("relative/x", "not an absolute path"),
    ] {
        let e = fx.root.resolve_confined(p, true).unwrap_err();
        assert!(e.to_string().contains(want), "{p}: {e}");
        assert!(e.to_string().starts_with(p), "names the path: {e}");
    }
    // Relative links that stay inside are followed.
    assert_eq!(
        fx.root
            .resolve_confined("/rel/net/core/rmem_max", true)
            .unwrap(),
        r.join("proc/sys/net/core/rmem_max")
    );
    // Without follow_last the link itself is the result (to remove it).
    assert_eq!(
        fx.root.resolve_confined("/abs", false).unwrap(),
        r.join("abs")
    );
    // Reads map absolute links inside the root (fixtures hold such links) and
    // name a loop as a loop.
    assert!(fx.root.resolve("/abs/x").unwrap().starts_with(r));
    assert!(matches!(
        fx.root.read("/loopa/x"),
        Err(HostError::SymlinkLoop { .. })
    ));
}

#[test]
fn writes_do_not_follow_a_symlink_or_open_a_fifo_in_place_of_a_knob() {
    let fx = fixture();
    let r = fx.dir();
    let victim = fx.outside().join("victim");
    fs::write(&victim, "keep\n").unwrap();
    let knob = r.join("proc/sys/net/core/wmem_max");
    symlink(&victim, &knob).unwrap();
    let e = fx
        .root
        .write("/proc/sys/net/core/wmem_max", "1")
        .unwrap_err();
    assert!(e.to_string().contains("escapes the root"), "{e}");
    fs::remove_file(&knob).unwrap();
    symlink("../../../../outside/victim", &knob).unwrap();
    assert!(fx.root.write("/proc/sys/net/core/wmem_max", "1").is_err());
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
    fs::remove_file(&knob).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &knob,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let e = fx
        .root
        .write("/proc/sys/net/core/wmem_max", "1")
        .unwrap_err();
    assert!(
        matches!(e, HostError::NotRegular { kind: "FIFO", .. }),
        "{e}"
    );
    let e = fx.root.read("/proc/sys/net/core/wmem_max").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/proc/sys/net/core/wmem_max: not a regular file (FIFO); not read"
    );
}

#[test]
fn reads_refuse_devices_directories_and_files_over_the_cap() {
    let live = Root::live();
    let e = live.read("/dev/zero").unwrap_err();
    assert!(
        matches!(
            e,
            HostError::NotRegular {
                kind: "character device",
                ..
            }
        ),
        "{e}"
    );
    let fx = fixture();
    let e = fx.root.read("/proc/sys/net").unwrap_err();
    assert!(
        matches!(
            e,
            HostError::NotRegular {
                kind: "directory",
                ..
            }
        ),
        "{e}"
    );
    let big = fx.dir().join("proc/interrupts");
    fs::File::create(&big)
        .unwrap()
        .set_len(nettune_host::root::MAX_READ + 1)
        .unwrap();
    let e = fx.root.read("/proc/interrupts").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/proc/interrupts: larger than 16777216 bytes; not read"
    );
    let mut buf = String::from("stale");
    assert!(fx.root.read_into("/proc/interrupts", &mut buf).is_err());
    assert!(buf.is_empty());
    fs::File::create(&big)
        .unwrap()
        .set_len(nettune_host::root::MAX_READ)
        .unwrap();
    assert_eq!(
        fx.root.read("/proc/interrupts").unwrap().len() as u64,
        nettune_host::root::MAX_READ
    );
    assert!(!fx.root.read_into("/proc/nope", &mut buf).unwrap());
}

#[test]
fn persist_is_refused_when_etc_leads_out_of_the_root() {
    let fx = fixture();
    symlink(fx.outside(), fx.dir().join("etc")).unwrap();
    let e = nettune_host::persist::persist_changes(
        &fx.root,
        "{}",
        "/usr/bin/nettune",
        "/var/lib/nettune",
    )
    .unwrap_err();
    assert!(matches!(e, HostError::LinkEscape { .. }), "{e}");
    fs::remove_file(fx.dir().join("etc")).unwrap();
    fs::create_dir_all(fx.dir().join("etc/systemd")).unwrap();
    symlink("/", fx.dir().join("etc/systemd/system")).unwrap();
    assert!(nettune_host::persist::persist_changes(&fx.root, "{}", "/x", "/y").is_err());
    fs::remove_file(fx.dir().join("etc/systemd/system")).unwrap();
    let ch = nettune_host::persist::persist_changes(&fx.root, "{}", "/opt/my tools/nettune", "/s")
        .unwrap();
    let unit = ch
        .iter()
        .find(|c| matches!(&c.target, Target::Created { path, .. } if path == nettune_host::persist::UNIT_PATH))
        .unwrap();
    assert!(
        unit.after.contains(
            "ExecStart=\"/opt/my tools/nettune\" apply --plan /etc/nettune/plan.json --state-dir /s --yes"
        ),
        "{}",
        unit.after
    );
    assert!(
        nettune_host::persist::persist_changes(&fx.root, "{}", "/x", "/s\nExecStartPre=/evil")
            .is_err()
    );
}

/// Issue 38: with a packaged unit, persist writes the plan and enables that
/// unit (as tuned does); it writes no unit of its own to shadow it.
#[test]
fn persist_enables_the_packaged_unit_instead_of_writing_one() {
    use nettune_host::persist::{persist_changes, PLAN_PATH, UNIT_PATH, WANTS_PATH};
    let fx = fixture();
    let created = |ch: &[Change], p: &str| {
        ch.iter()
            .find(|c| matches!(&c.target, Target::Created { path, .. } if path == p))
            .map(|c| c.after.clone())
    };
    // No package: nettune's own unit, enabled.
    let own = persist_changes(&fx.root, "{}", "/usr/bin/nettune", "/var/lib/nettune").unwrap();
    assert!(created(&own, UNIT_PATH).is_some());
    assert_eq!(created(&own, WANTS_PATH).as_deref(), Some(UNIT_PATH));
    // The .deb's unit in place: only the plan and the link to it.
    let shipped = "/usr/lib/systemd/system/nettune.service";
    fs::create_dir_all(fx.dir().join("usr/lib/systemd/system")).unwrap();
    fs::write(fx.dir().join(&shipped[1..]), "[Unit]\n").unwrap();
    let ch = persist_changes(&fx.root, "{}", "/usr/bin/nettune", "/var/lib/nettune").unwrap();
    assert_eq!(created(&ch, UNIT_PATH), None, "{ch:?}");
    assert_eq!(created(&ch, WANTS_PATH).as_deref(), Some(shipped));
    assert_eq!(created(&ch, PLAN_PATH).as_deref(), Some("{}\n"));
}

#[test]
fn default_state_dir_is_resolved_inside_the_root() {
    let fx = fixture();
    assert_eq!(
        apply::default_state_dir(&fx.root, None).unwrap(),
        fx.dir().join("var/lib/nettune")
    );
    symlink(fx.outside(), fx.dir().join("var")).unwrap();
    assert!(apply::default_state_dir(&fx.root, None).is_err());
    // --state-dir is the user's own and taken as given.
    assert_eq!(
        apply::default_state_dir(&fx.root, Some(Path::new("/given"))).unwrap(),
        PathBuf::from("/given")
    );
}

#[test]
fn rollback_refuses_an_edited_journal_before_touching_anything() {
    let fx = fixture();
    let k = knobs(&fx);
    let state = fx.state();
    let sysctl = Target::File {
        path: "/proc/sys/net/core/rmem_max".into(),
        format: ValueFormat::Text,
    };
    apply::apply(
        &k,
        &state,
        &plan(vec![change(sysctl, "4194304")]),
        ApplyOptions::default(),
    )
    .unwrap();
    let mut w = state.writer(1).unwrap();
    w.append(&nettune_host::journal::Record::Before {
        seq: 7,
        target: created("/../outside/victim", CreatedKind::File),
        knob: "x".into(),
        original: None,
        intended: "x".into(),
        queue: None,
    })
    .unwrap();
    drop(w);
    fs::write(fx.outside().join("victim"), "keep\n").unwrap();
    let e = apply::rollback(&k, &state, None, true).unwrap_err();
    assert!(
        matches!(
            &e,
            RollbackError::Refused {
                generation: 1,
                seq: 7,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("/../outside/victim"), "{e}");
    assert!(fx.outside().join("victim").exists());
    assert_eq!(
        fs::read_to_string(fx.dir().join("proc/sys/net/core/rmem_max")).unwrap(),
        "4194304\n",
        "nothing restored from a refused journal"
    );
}

/// Issue 17 item 6: a plan (a file a user can edit) may change irqbalance's
/// environment file only by adding `--banirq=N`: another argument, a changed
/// byte elsewhere, or shell syntax is refused and the file left as it was.
#[test]
fn irqbalance_env_takes_only_added_bans() {
    let fx = fixture();
    let k = knobs(&fx);
    let env = fx.dir().join("etc/default/irqbalance");
    fs::create_dir_all(env.parent().unwrap()).unwrap();
    let orig = "# keep\nIRQBALANCE_ARGS=\"--policyscript=/x\"\n";
    fs::write(&env, orig).unwrap();
    let t = Target::File {
        path: "/etc/default/irqbalance".into(),
        format: ValueFormat::Text,
    };
    for bad in [
        "# keep\nIRQBALANCE_ARGS=\"--policyscript=/x --banirq=5 --oneshot\"\n",
        "# changed\nIRQBALANCE_ARGS=\"--policyscript=/x --banirq=5\"\n",
        "# keep\nIRQBALANCE_ARGS=\"--policyscript=/x --banirq=5\"\nIRQBALANCE_ONESHOT=1\n",
        "# keep\nIRQBALANCE_ARGS=\"$(id) --banirq=5\"\n",
    ] {
        let e = apply::apply(
            &k,
            &fx.state(),
            &plan(vec![change(t.clone(), bad)]),
            ApplyOptions::default(),
        );
        assert!(e.is_err(), "{bad}");
        assert_eq!(fs::read_to_string(&env).unwrap(), orig, "{bad}");
    }
    let good = "# keep\nIRQBALANCE_ARGS=\"--policyscript=/x --banirq=5 --banirq=7\"\n";
    apply::apply(
        &k,
        &fx.state(),
        &plan(vec![change(t, good)]),
        ApplyOptions::default(),
    )
    .unwrap();
    assert_eq!(fs::read_to_string(&env).unwrap(), good);
    apply::rollback(&k, &fx.state(), None, false).unwrap();
    assert_eq!(fs::read_to_string(&env).unwrap(), orig);
}

/// `fleet apply` shows each host's changes before it applies: the preview
/// reads the host's values now (not the plan's `before`), marks what is
/// already set, names what it cannot read, and writes nothing.
#[test]
fn preview_reads_the_host_as_it_is_and_writes_nothing() {
    let fx = fixture();
    let k = knobs(&fx);
    let rmem = Target::File {
        path: "/proc/sys/net/core/rmem_max".into(),
        format: ValueFormat::Text,
    };
    let wmem = Target::File {
        path: "/proc/sys/net/core/wmem_max".into(),
        format: ValueFormat::Text,
    };
    let core = Target::File {
        path: "/proc/sys/kernel/core_pattern".into(),
        format: ValueFormat::Text,
    };
    let mut stale = change(rmem.clone(), "4194304");
    stale.before = Some("1".into());
    let p = plan(vec![
        stale,
        change(rmem, "212992"),
        change(wmem, "4194304"),
        change(core, "|/tmp/x"),
    ]);
    let lines = apply::preview(&k, &p);
    let text: Vec<String> = lines.iter().map(|l| l.line()).collect();
    assert_eq!(
        text[0], "k /proc/sys/net/core/rmem_max: 212992 -> 4194304",
        "{text:?}"
    );
    assert!(text[1].ends_with("212992 -> 212992 (already)"), "{text:?}");
    assert!(text[2].contains("(absent) -> 4194304"), "{text:?}");
    assert!(
        text[3].contains("(unreadable:") && text[3].contains("core_pattern"),
        "{text:?}"
    );
    assert_eq!(
        fs::read_to_string(fx.dir().join("proc/sys/net/core/rmem_max")).unwrap(),
        "212992\n"
    );
    assert!(!fx.dir().join("proc/sys/net/core/wmem_max").exists());
    assert!(!fx.t.path().join("state").exists());
}

/// Issue 38: an offload turned back on through the journal, in the
/// fixture's `ethtool/IF.json` (`features.value.NAME.active`), and off
/// again on rollback; a feature nettune does not plan is refused.
#[test]
fn an_offload_is_turned_on_and_rolled_back() {
    let fx = fixture();
    fs::write(
        fx.dir().join("ethtool/eth0.json"),
        "{\"features\": {\"status\": \"ok\", \"value\": {\"rx-checksum\": {\"active\": false, \"fixed\": false}}}}\n",
    )
    .unwrap();
    let k = knobs(&fx);
    let t = Target::Ethtool {
        iface: "eth0".into(),
        group: model::plan::EthtoolGroup::Features,
        attr: "rx-checksum".into(),
    };
    assert_eq!(k.read_value(&t).unwrap().as_deref(), Some("0"));
    let mut c = change(t.clone(), "1");
    c.phase = Phase::Coalescing;
    apply::apply(&k, &fx.state(), &plan(vec![c]), ApplyOptions::default()).unwrap();
    assert_eq!(k.read_value(&t).unwrap().as_deref(), Some("1"));
    let text = fs::read_to_string(fx.dir().join("ethtool/eth0.json")).unwrap();
    assert!(text.contains("\"active\": true"), "{text}");
    apply::rollback(&k, &fx.state(), None, false).unwrap();
    assert_eq!(k.read_value(&t).unwrap().as_deref(), Some("0"));
    let bad = Target::Ethtool {
        iface: "eth0".into(),
        group: model::plan::EthtoolGroup::Features,
        attr: "rx-lro".into(),
    };
    assert!(k.read_value(&bad).is_err());
}
