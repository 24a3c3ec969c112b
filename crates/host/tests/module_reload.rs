//! Module parameters applied with a reload (`PlanOptions::reload_modules`),
//! on fixture roots only: the fixture loader records each reload in the tree
//! as the kernel would show it (`sys/module/M/parameters/P`) and in
//! `sys/module/M/nettune-reloads`. Nothing here runs modprobe.

#![allow(clippy::unwrap_used)]

use model::plan::{Change, NetnsScope, Phase, Plan, PlanOptions, Target};
use nettune_host::apply::{self, ApplyError, ApplyOptions, Knobs, ModuleLoader};
use nettune_host::journal::StateDir;
use nettune_host::{HostError, Root};
use std::fs;
use std::path::PathBuf;

const SNIPPET: &str = "nettune-e1000e-InterruptThrottleRate.conf";

struct Fx {
    t: tempfile::TempDir,
    root: Root,
}

impl Fx {
    fn new() -> Fx {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("root");
        fs::create_dir_all(r.join("sys/module/e1000e/parameters")).unwrap();
        fs::write(
            r.join("sys/module/e1000e/parameters/InterruptThrottleRate"),
            "3\n",
        )
        .unwrap();
        Fx {
            root: Root::new(&r),
            t,
        }
    }
    fn knobs(&self) -> Knobs {
        Knobs::fixture(&self.root, self.snippets())
    }
    fn state(&self) -> StateDir {
        StateDir::new(self.t.path().join("state"))
    }
    fn snippets(&self) -> PathBuf {
        self.t.path().join("state/modprobe.d")
    }
    fn snippet(&self) -> Option<String> {
        fs::read_to_string(self.snippets().join(SNIPPET)).ok()
    }
    fn param(&self) -> String {
        fs::read_to_string(
            self.root
                .dir()
                .join("sys/module/e1000e/parameters/InterruptThrottleRate"),
        )
        .unwrap()
    }
    fn reloads(&self) -> String {
        fs::read_to_string(self.root.dir().join("sys/module/e1000e/nettune-reloads"))
            .unwrap_or_default()
    }
}

fn plan(value: &str, reload: bool) -> Plan {
    Plan {
        schema_version: 1,
        profile: "t".into(),
        profile_toml: None,
        fingerprint: "f".into(),
        hostname: None,
        options: PlanOptions {
            reload_modules: reload,
            ..PlanOptions::default()
        },
        scope: NetnsScope::Init,
        changes: vec![Change {
            phase: Phase::Modules,
            knob: "InterruptThrottleRate".into(),
            target: Target::ModuleParam {
                module: "e1000e".into(),
                param: "InterruptThrottleRate".into(),
            },
            before: None,
            after: value.into(),
            rule: model::plan::Origin::Experiment,
            reason: "test".into(),
            source: "test".into(),
        }],
        notes: vec![],
    }
}

#[test]
fn without_reload_only_the_snippet_is_written() {
    let fx = Fx::new();
    let k = fx.knobs();
    apply::apply(&k, &fx.state(), &plan("0", false), ApplyOptions::default()).unwrap();
    assert!(fx
        .snippet()
        .unwrap()
        .contains("options e1000e InterruptThrottleRate=0"));
    assert_eq!(fx.param(), "3\n");
    assert_eq!(fx.reloads(), "");
    apply::rollback(&k, &fx.state(), None, false).unwrap();
    assert_eq!(fx.snippet(), None);
    assert_eq!(fx.reloads(), "");
}

#[test]
fn a_reload_follows_the_write_and_the_rollback_restores_both() {
    let fx = Fx::new();
    let k = fx.knobs();
    let r = apply::apply(&k, &fx.state(), &plan("0", true), ApplyOptions::default()).unwrap();
    assert_eq!(r.changes.len(), 1);
    assert_eq!(fx.param(), "0\n");
    assert_eq!(fx.reloads(), "reload InterruptThrottleRate=0\n");
    // The generation's plan says to reload, so rollback reloads too: with
    // no snippet left the module loads with no parameter of nettune's.
    apply::rollback(&k, &fx.state(), None, false).unwrap();
    assert_eq!(fx.snippet(), None);
    assert_eq!(
        fx.reloads(),
        "reload InterruptThrottleRate=0\nreload\n",
        "one reload after the write, one after the rollback"
    );
}

#[test]
fn rollback_puts_back_an_earlier_snippet_and_reloads_with_it() {
    let fx = Fx::new();
    let k = fx.knobs();
    apply::apply(&k, &fx.state(), &plan("1", true), ApplyOptions::default()).unwrap();
    let earlier = fx.snippet().unwrap();
    apply::apply(&k, &fx.state(), &plan("0", true), ApplyOptions::default()).unwrap();
    assert_eq!(fx.param(), "0\n");
    apply::rollback(&k, &fx.state(), None, false).unwrap();
    // Restore writes the journaled text trimmed (as it always has).
    assert_eq!(fx.snippet().unwrap().trim(), earlier.trim());
    assert_eq!(fx.param(), "1\n");
    assert!(
        fx.reloads().ends_with("reload InterruptThrottleRate=1\n"),
        "{}",
        fx.reloads()
    );
}

/// A loader that fails, or a kernel that shows another value after the
/// reload: the apply fails naming the module, and the snippet is rolled back.
#[derive(Debug)]
struct Broken(bool);

impl ModuleLoader for Broken {
    fn reload(&self, module: &str, _params: &[(String, String)]) -> Result<(), HostError> {
        if self.0 {
            Err(HostError::io(
                format!("modprobe -r {module}"),
                std::io::Error::other("Module e1000e is in use"),
            ))
        } else {
            Ok(())
        }
    }
}

#[test]
fn a_failed_or_unseen_reload_fails_the_apply_and_rolls_it_back() {
    for (fails, words) in [
        (
            true,
            "module reload failed: modprobe -r e1000e: Module e1000e is in use",
        ),
        (false, "the kernel shows InterruptThrottleRate=3, not 0"),
    ] {
        let fx = Fx::new();
        let k = fx.knobs().with_loader(Box::new(Broken(fails)));
        let e =
            apply::apply(&k, &fx.state(), &plan("0", true), ApplyOptions::default()).unwrap_err();
        let ApplyError::Knob { error, .. } = &e else {
            panic!("{e}")
        };
        assert!(error.to_string().contains(words), "{error}");
        assert_eq!(fx.snippet(), None);
    }
}

const RPS: &str = "sys/class/net/eth0/queues/rx-0/rps_cpus";

/// A reload as the real e1000 does one (found in a QEMU guest,
/// docs/guests.md): the driver's interfaces get their defaults again, here
/// a queue's `rps_cpus` back to 0; the parameter shows its new value.
#[derive(Debug)]
struct Resets {
    root: PathBuf,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ModuleLoader for Resets {
    fn reload(&self, module: &str, params: &[(String, String)]) -> Result<(), HostError> {
        fs::write(self.root.join(RPS), "0\n").unwrap();
        let itr = params.first().map_or("3", |(_, v)| v.as_str());
        let param = format!("sys/module/{module}/parameters/InterruptThrottleRate");
        fs::write(self.root.join(param), format!("{itr}\n")).unwrap();
        self.log.lock().unwrap().push(format!("reload {itr}"));
        Ok(())
    }
}

/// The plan's changes written before the reload (here RPS) are written
/// again after it, and rollback reloads before it restores the others, so
/// that the reload does not undo the restores.
#[test]
fn changes_a_reload_reset_are_written_again_and_rollback_reloads_first() {
    let fx = Fx::new();
    let root = fx.root.dir().to_path_buf();
    fs::create_dir_all(root.join(RPS).parent().unwrap()).unwrap();
    fs::write(root.join(RPS), "1\n").unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let loader = Resets {
        root: root.clone(),
        log: log.clone(),
    };
    let k = fx.knobs().with_loader(Box::new(loader));
    let mut p = plan("0", true);
    let rps = Change {
        phase: Phase::Steering,
        knob: "rps_cpus".into(),
        target: Target::File {
            path: format!("/{RPS}"),
            format: model::plan::ValueFormat::Mask,
        },
        after: "2".into(),
        ..p.changes[0].clone()
    };
    p.changes.insert(0, rps);
    apply::apply(&k, &fx.state(), &p, ApplyOptions::default()).unwrap();
    let read = || fs::read_to_string(root.join(RPS)).unwrap();
    assert_eq!(read(), "2\n", "the reload's reset of rps_cpus stayed");
    apply::rollback(&k, &fx.state(), None, false).unwrap();
    assert_eq!(log.lock().unwrap().as_slice(), ["reload 0", "reload 3"]);
    assert_eq!(
        read(),
        "1\n",
        "rollback's reload undid the restored rps_cpus"
    );
}
