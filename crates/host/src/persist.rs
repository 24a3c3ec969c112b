//! `apply --persist`: the plan file the boot unit reads, and the unit's
//! enablement, expressed as journaled changes (created files), so rollback
//! removes them like any other change. Where a package shipped the unit
//! (`/usr/lib/systemd/system/nettune.service`), persist writes the plan and
//! enables that unit, as tuned enables its packaged unit; only without one
//! (a `cargo install`) does it write its own unit under `/etc`, which would
//! otherwise shadow the packaged one.

use crate::error::HostError;
use crate::root::Root;
use model::plan::{Change, CreatedKind, Phase, Target};

/// Where the persisted plan is written.
pub const PLAN_PATH: &str = "/etc/nettune/plan.json";
/// The unit file.
pub const UNIT_PATH: &str = "/etc/systemd/system/nettune.service";
/// Where a package installs the boot unit (cargo-deb's `systemd-units`, and
/// the pre-usrmerge path), in the order systemd prefers them.
pub const SHIPPED_UNITS: [&str; 2] = [
    "/usr/lib/systemd/system/nettune.service",
    "/lib/systemd/system/nettune.service",
];
/// The enablement symlink.
pub const WANTS_PATH: &str = "/etc/systemd/system/multi-user.target.wants/nettune.service";

/// Directories created for the unit when missing, parents first.
pub const DIRS: [&str; 5] = [
    "/etc",
    "/etc/nettune",
    "/etc/systemd",
    "/etc/systemd/system",
    "/etc/systemd/system/multi-user.target.wants",
];

/// Whether `path` of kind `what` is one that `--persist` creates: the only
/// `created` targets a plan or journal may name.
pub fn allowed(path: &str, what: CreatedKind) -> bool {
    match what {
        CreatedKind::Dir => DIRS.contains(&path),
        CreatedKind::File => path == PLAN_PATH || path == UNIT_PATH,
        CreatedKind::Symlink => path == WANTS_PATH,
    }
}

/// A word for `ExecStart=`: as is when plain, else double-quoted with `\\`
/// and `"` escaped; `%` doubled (a systemd specifier); `None` when it holds
/// a control character (a newline would start a new unit directive).
fn unit_word(s: &str) -> Option<String> {
    if s.chars().any(char::is_control) {
        return None;
    }
    let s = s.replace('%', "%%");
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,=:@%".contains(c))
    {
        return Some(s);
    }
    Some(format!(
        "\"{}\"",
        s.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

/// The unit text for `exe` applying [`PLAN_PATH`] with journal in `state_dir`
/// (`None` when either holds a control character).
pub fn unit_text(exe: &str, state_dir: &str) -> Option<String> {
    let exe = unit_word(exe)?;
    let state_dir = unit_word(state_dir)?;
    Some(format!(
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
    ))
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
        rule: model::plan::Origin::Persist,
        reason: reason.into(),
        source: "systemd.unit(5)".into(),
    }
}

/// The packaged unit under `root`, if a package installed one.
pub fn shipped_unit(root: &Root) -> Result<Option<&'static str>, HostError> {
    for p in SHIPPED_UNITS {
        if root.resolve_confined(p, false)?.is_file() {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// The changes that install the boot apply under `root`: missing directories
/// first, then the plan, and the `multi-user.target.wants` link to the
/// packaged unit; without a packaged unit, nettune's own unit in `/etc`
/// first. Each path is resolved inside the root; a symlinked `etc/` (or
/// deeper directory) leading out of a fixture root is refused.
pub fn persist_changes(
    root: &Root,
    plan_json: &str,
    exe: &str,
    state_dir: &str,
) -> Result<Vec<Change>, HostError> {
    let mut out = Vec::new();
    for p in [PLAN_PATH, UNIT_PATH, WANTS_PATH] {
        root.resolve_confined(p, false)?;
    }
    let shipped = shipped_unit(root)?;
    for d in DIRS {
        if !root.resolve_confined(d, true)?.is_dir() {
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
    let unit = unit_text(exe, state_dir).ok_or_else(|| HostError::Refused {
        path: state_dir.into(),
        why: "a path with a control character cannot go into a unit file",
    })?;
    let target = match shipped {
        Some(p) => p,
        None => {
            out.push(created(
                UNIT_PATH,
                CreatedKind::File,
                unit,
                "oneshot unit running `nettune apply --plan` at boot (no packaged unit)",
            ));
            UNIT_PATH
        }
    };
    out.push(created(
        WANTS_PATH,
        CreatedKind::Symlink,
        target.into(),
        if shipped.is_some() {
            "enables the packaged unit for multi-user.target (systemctl enable nettune)"
        } else {
            "enables the unit for multi-user.target"
        },
    ));
    Ok(out)
}
