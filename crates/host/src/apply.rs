//! Applying a plan through the journal, rolling back, and checking drift.
//!
//! Every change is: read the original, journal it durably, write, read back
//! and compare. Failures are classified: a managed IRQ refusing its affinity
//! (EIO before 6.12, EPERM after) is *unchangeable* and the apply goes on;
//! EBUSY/EAGAIN are retried; anything else rolls back this apply and names
//! the knob.
//!
//! The parts:
//! - [`Knobs`] ([`knob`](self::Knobs::knob)): one [`Knob`] per kind of
//!   target (`knob/`: file, IRQ affinity, ethtool attribute, service, module
//!   parameter, created file), over a [`Backend`] chosen once when the root
//!   is opened ([`Knobs::open`]): the live kernel or a fixture tree;
//! - [`targets`]: what a plan or journal may name, checked before anything
//!   is touched;
//! - [`begin`]/[`apply`] (`session.rs`): the apply loop over one journal
//!   generation, pausing after a channel change so the caller can re-plan;
//! - [`rollback`] and [`verify`].

mod backend;

/// `nettune apply`'s exit status when a knob the plan writes is absent on
/// the host (no such sysctl, `/sys` or `/proc/irq` file; see
/// [`ApplyError::knob_absent`]). Nothing of the plan stays applied.
pub const EXIT_KNOB_ABSENT: u8 = 5;

/// `nettune apply`'s exit status when the OS refused a write for want of
/// privileges (not root: EACCES/EPERM on a knob or the journal; see
/// [`ApplyError::refused_for_privileges`]).
pub const EXIT_NOT_ROOT: u8 = 6;

mod files;
mod irqmap;
mod knob;
mod preview;
mod report;
mod rollback;
mod session;
pub mod targets;
mod verify;

use crate::error::HostError;
use crate::root::Root;
use std::path::{Path, PathBuf};

pub use backend::{
    Backend, FixtureHost, FollowUp, LiveHost, NoServices, ServiceState, Services, Systemd,
};
pub use knob::module_param::{FixtureLoader, Modprobe, ModuleLoader};
pub use knob::{CheckError, Knob, Knobs};
pub use preview::{preview, PreviewLine};
pub use report::{
    Applied, ApplyError, ApplyReport, KnobError, OtherHost, Outcome, PlanRefused, ReplanError,
    RollbackIncomplete, Stopped,
};
pub use rollback::{rollback, rollback_locked, RollbackError, RollbackReport, Unrestored};
pub use session::{
    apply, apply_replanning, begin, check_change, check_plan, Apply, ApplyOptions, Paused,
    Progress, Replan,
};
pub use verify::{verify, DriftItem, DriftStatus};

/// The state directory for a root: `--state-dir` when given, else
/// `/var/lib/nettune` under the root.
///
/// `--state-dir` is the user's and trusted as given. The default is resolved
/// inside the root like any path apply writes: a `var/` (or `var/lib/`)
/// symlinked out of a fixture root is refused with [`HostError::Escape`].
pub fn default_state_dir(root: &Root, given: Option<&Path>) -> Result<PathBuf, HostError> {
    match given {
        Some(p) => Ok(p.to_path_buf()),
        None => root.resolve_confined(DEFAULT_STATE_DIR, true),
    }
}

/// The state directory on a live host.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/nettune";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::StateDir;
    use model::plan::ValueFormat;
    use model::plan::{Change, EthtoolGroup, NetnsScope, Phase, Plan, PlanOptions, Target};

    fn change(phase: Phase, knob: &str, target: Target, after: &str) -> Change {
        Change {
            phase,
            knob: knob.into(),
            target,
            before: None,
            after: after.into(),
            rule: model::plan::Origin::Experiment,
            reason: "test".into(),
            source: "test".into(),
        }
    }

    fn file(path: &str) -> Target {
        Target::File {
            path: path.into(),
            format: ValueFormat::Text,
        }
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

    fn channels(after: &str) -> Change {
        change(
            Phase::Channels,
            "combined",
            Target::Ethtool {
                iface: "eth0".into(),
                group: EthtoolGroup::Channels,
                attr: "combined".into(),
            },
            after,
        )
    }

    /// `T/root` with 2 of 8 combined channels on eth0 and two sysctls.
    fn two_channels(t: &Path) -> PathBuf {
        let r = t.join("root");
        std::fs::create_dir_all(r.join("ethtool")).unwrap();
        std::fs::create_dir_all(r.join("proc/sys/net")).unwrap();
        std::fs::write(
            r.join("ethtool/eth0.json"),
            "{\n  \"channels\": {\"status\": \"ok\", \"value\": {\"combined_max\": 8, \"combined\": 2}}\n}\n",
        )
        .unwrap();
        std::fs::write(r.join("proc/sys/net/old"), "0\n").unwrap();
        std::fs::write(r.join("proc/sys/net/new"), "0\n").unwrap();
        r
    }

    #[test]
    fn channels_change_pauses_and_the_caller_replans_the_later_phases() {
        let t = tempfile::tempdir().unwrap();
        let r = two_channels(t.path());
        let root = Root::new(&r);
        let k = Knobs::fixture(&root, t.path().join("state/modprobe.d"));
        let plan = plan(vec![
            channels("8"),
            change(Phase::IrqAffinity, "old", file("/proc/sys/net/old"), "1"),
        ]);
        let state = StateDir::new(t.path().join("state"));
        let Progress::ChannelsChanged(paused) = begin(&k, &state, &plan, ApplyOptions::default())
            .unwrap()
            .run()
            .unwrap()
        else {
            panic!("no pause after the channel change");
        };
        assert_eq!(paused.remaining(), 1);
        assert_eq!(paused.after().knob, "combined");
        // The caller re-plans from the host as it now is and continues the
        // same generation.
        let rep = paused
            .resume(vec![
                channels("4"),
                change(Phase::IrqAffinity, "new", file("/proc/sys/net/new"), "7"),
            ])
            .unwrap();
        assert_eq!(rep.generation, 1);
        assert_eq!(
            rep.changes.len(),
            2,
            "the re-planned channel change is dropped"
        );
        assert_eq!(
            std::fs::read_to_string(r.join("proc/sys/net/new")).unwrap(),
            "7\n"
        );
        assert_eq!(
            std::fs::read_to_string(r.join("proc/sys/net/old")).unwrap(),
            "0\n"
        );
        assert!(std::fs::read_to_string(r.join("ethtool/eth0.json"))
            .unwrap()
            .contains("\"combined\": 8"));
        assert_eq!(
            state.load(1).unwrap().ended(),
            Some(crate::journal::EndStatus::Applied)
        );
        rollback(&k, &state, None, false).unwrap();
        assert!(std::fs::read_to_string(r.join("ethtool/eth0.json"))
            .unwrap()
            .contains("\"combined\": 2}"));
        assert_eq!(
            std::fs::read_to_string(r.join("proc/sys/net/new")).unwrap(),
            "0\n"
        );
    }

    #[test]
    fn a_failed_replan_rolls_the_channel_change_back() {
        let t = tempfile::tempdir().unwrap();
        let r = two_channels(t.path());
        let root = Root::new(&r);
        let k = Knobs::fixture(&root, t.path().join("state/modprobe.d"));
        let state = StateDir::new(t.path().join("state"));
        let plan = plan(vec![channels("8")]);
        let Progress::ChannelsChanged(paused) = begin(&k, &state, &plan, ApplyOptions::default())
            .unwrap()
            .run()
            .unwrap()
        else {
            panic!("no pause after the channel change");
        };
        let e = paused.abort("no such profile".into());
        assert!(matches!(e, ApplyError::Knob { rollback: None, .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "combined (ethtool channels eth0 combined): re-reading IRQs after channels: no such profile; this apply (generation 1) was rolled back"
        );
        assert!(std::fs::read_to_string(r.join("ethtool/eth0.json"))
            .unwrap()
            .contains("\"combined\": 2}"));
        let g = state.load(1).unwrap();
        assert_eq!(g.ended(), Some(crate::journal::EndStatus::Failed));
        assert!(g.rolled_back());
    }

    #[test]
    fn a_plan_applied_exactly_stops_after_its_channel_change() {
        let t = tempfile::tempdir().unwrap();
        let r = two_channels(t.path());
        let root = Root::new(&r);
        let k = Knobs::fixture(&root, t.path().join("state/modprobe.d"));
        let state = StateDir::new(t.path().join("state"));
        let rep = apply(
            &k,
            &state,
            &plan(vec![
                channels("8"),
                change(Phase::Sysctls, "old", file("/proc/sys/net/old"), "1"),
            ]),
            ApplyOptions::default(),
        )
        .unwrap();
        let stopped = rep.stopped.unwrap();
        assert_eq!(stopped.remaining, 1);
        assert_eq!(stopped.after, "ethtool channels eth0 combined");
        assert_eq!(
            state.load(1).unwrap().ended(),
            Some(crate::journal::EndStatus::Stopped)
        );
        assert_eq!(
            std::fs::read_to_string(r.join("proc/sys/net/old")).unwrap(),
            "0\n"
        );
    }
}
