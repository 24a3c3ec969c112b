//! `apply --persist`: a systemd unit that re-applies the plan at boot, and
//! the plan file it reads, expressed as journaled changes (created files), so
//! rollback removes them like any other change.

use crate::root::Root;
use model::plan::{Change, CreatedKind, Phase, Target};

/// Where the persisted plan is written.
pub const PLAN_PATH: &str = "/etc/nettune/plan.json";
/// The unit file.
pub const UNIT_PATH: &str = "/etc/systemd/system/nettune.service";
/// The enablement symlink.
pub const WANTS_PATH: &str = "/etc/systemd/system/multi-user.target.wants/nettune.service";

/// The unit text for `exe` applying [`PLAN_PATH`] with journal in `state_dir`.
pub fn unit_text(exe: &str, state_dir: &str) -> String {
    format!(
        "# Written by `nettune apply --persist`; `nettune rollback` removes it.\n\
[Unit]\n\
Description=nettune: re-apply the network tuning plan at boot\n\
After=network-online.target irqbalance.service\n\
Wants=network-online.target\n\
\n\
[Service]\n\
Type=oneshot\n\
ExecStart={exe} apply --plan {PLAN_PATH} --state-dir {state_dir} --yes\n\
RemainAfterExit=yes\n\
\n\
[Install]\n\
WantedBy=multi-user.target\n"
    )
}

fn created(path: &str, what: CreatedKind, value: String, reason: &str) -> Change {
    Change {
        phase: Phase::Modules,
        knob: "persist".into(),
        target: Target::Created {
            path: path.into(),
            what,
        },
        before: None,
        after: value,
        rule: "persist".into(),
        reason: reason.into(),
        source: "systemd.unit(5)".into(),
    }
}

/// The changes that install the unit under `root`: missing directories
/// first, then the plan, the unit and the `multi-user.target.wants` link.
pub fn persist_changes(root: &Root, plan_json: &str, exe: &str, state_dir: &str) -> Vec<Change> {
    let mut out = Vec::new();
    for d in [
        "/etc",
        "/etc/nettune",
        "/etc/systemd",
        "/etc/systemd/system",
        "/etc/systemd/system/multi-user.target.wants",
    ] {
        if !root.dir().join(d.trim_start_matches('/')).is_dir() {
            out.push(created(
                d,
                CreatedKind::Dir,
                String::new(),
                "directory for the boot unit",
            ));
        }
    }
    let mut plan = plan_json.to_string();
    if !plan.ends_with('\n') {
        plan.push('\n');
    }
    out.push(created(
        PLAN_PATH,
        CreatedKind::File,
        plan,
        "the plan re-applied at boot",
    ));
    out.push(created(
        UNIT_PATH,
        CreatedKind::File,
        unit_text(exe, state_dir),
        "oneshot unit running `nettune apply --plan` at boot",
    ));
    out.push(created(
        WANTS_PATH,
        CreatedKind::Symlink,
        UNIT_PATH.into(),
        "enables the unit for multi-user.target",
    ));
    out
}
