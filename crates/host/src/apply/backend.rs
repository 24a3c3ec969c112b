//! The host a plan is applied to, chosen once when the root is opened
//! ([`Knobs::open`](super::Knobs::open)): the live kernel, or a fixture tree
//! standing in for it. Everything that differs between the two is here —
//! ethtool, services, how a journaled original goes back into a kernel file,
//! and what the kernel does to `effective_affinity` — so the knobs and the
//! apply loop never ask which one they have.

use super::knob::irq::effective_files;
use crate::error::HostError;
use crate::ethtool::{Ethtool, FixtureEthtool, LiveEthtool};
use crate::root::{open_for_write, Root};
use model::plan::{Target, ValueFormat};
use model::CpuSet;
use std::path::Path;
use std::process::Command;

/// A service's state as plans and journals write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceState {
    /// `running`.
    Running,
    /// `stopped`.
    Stopped,
}

impl ServiceState {
    /// `running` or `stopped`; anything else is `None`.
    pub fn parse(s: &str) -> Option<ServiceState> {
        match s {
            "running" => Some(ServiceState::Running),
            "stopped" => Some(ServiceState::Stopped),
            _ => None,
        }
    }

    /// The name as in plans and journals.
    pub fn name(self) -> &'static str {
        match self {
            ServiceState::Running => "running",
            ServiceState::Stopped => "stopped",
        }
    }
}

/// Starts and stops system services (irqbalance).
pub trait Services {
    /// Whether services are managed at all (not under a fixture root).
    fn managed(&self) -> bool {
        true
    }
    /// The service's state; `None` when the host has no service manager.
    fn state(&self, name: &str) -> Result<Option<ServiceState>, HostError>;
    /// Bring the service to `state`.
    fn set(&self, name: &str, state: ServiceState) -> Result<(), HostError>;
    /// Restart the service if it runs (so it rereads its environment file).
    fn restart(&self, name: &str) -> Result<(), HostError>;
}

/// systemd through `systemctl`.
#[derive(Debug, Default)]
pub struct Systemd;

impl Services for Systemd {
    fn state(&self, name: &str) -> Result<Option<ServiceState>, HostError> {
        let out = Command::new("systemctl")
            .args(["is-active", name])
            .output()
            .map_err(|e| HostError::io(format!("systemctl is-active {name}"), e))?;
        let s = String::from_utf8_lossy(&out.stdout);
        Ok(Some(if s.trim() == "active" {
            ServiceState::Running
        } else {
            ServiceState::Stopped
        }))
    }

    fn set(&self, name: &str, state: ServiceState) -> Result<(), HostError> {
        let verb = match state {
            ServiceState::Running => "start",
            ServiceState::Stopped => "stop",
        };
        systemctl(verb, name)
    }

    fn restart(&self, name: &str) -> Result<(), HostError> {
        systemctl("try-restart", name)
    }
}

/// `systemctl VERB NAME`, its stderr as the error.
fn systemctl(verb: &str, name: &str) -> Result<(), HostError> {
    run_tool("systemctl", &[verb, name])
}

/// `PROGRAM ARGS`, its stderr as the error (named by the command line).
pub(crate) fn run_tool<S: AsRef<std::ffi::OsStr>>(
    program: &str,
    args: &[S],
) -> Result<(), HostError> {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let what = format!("{program} {}", words.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| HostError::io(&what, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(HostError::Io {
            path: what.into(),
            error: std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        })
    }
}

/// No service manager (fixture roots): services are not managed and read as
/// absent.
#[derive(Debug, Default)]
pub struct NoServices;

impl Services for NoServices {
    fn managed(&self) -> bool {
        false
    }
    fn state(&self, _name: &str) -> Result<Option<ServiceState>, HostError> {
        Ok(None)
    }
    fn set(&self, name: &str, _state: ServiceState) -> Result<(), HostError> {
        Err(HostError::NotFound {
            path: format!("service {name}").into(),
        })
    }
    fn restart(&self, name: &str) -> Result<(), HostError> {
        Err(HostError::NotFound {
            path: format!("service {name}").into(),
        })
    }
}

/// A write apply makes because of another one, journaled like any other:
/// under a fixture, the `effective_affinity` the kernel would have moved.
#[derive(Debug, Clone, PartialEq)]
pub struct FollowUp {
    /// Knob name for messages and the journal.
    pub knob: &'static str,
    /// What is written.
    pub target: Target,
    /// The value.
    pub value: String,
}

/// The host behind the knobs.
pub trait Backend {
    /// The root kernel files are read and written under.
    fn root(&self) -> &Root;
    /// Ethtool access.
    fn ethtool(&self) -> &dyn Ethtool;
    /// The service manager.
    fn services(&self) -> &dyn Services;
    /// Put a journaled original text back into the kernel file `path`.
    fn restore_file(&self, path: &str, raw: &str) -> Result<(), HostError>;
    /// After IRQ `irq`'s affinity was set to `cpus`: the writes that stand
    /// for what the kernel does to `effective_affinity` (none on a live host,
    /// where the kernel moves it itself).
    fn effective_affinity(&self, irq: u32, cpus: &CpuSet) -> Result<Vec<FollowUp>, HostError>;
}

/// The running kernel: netlink and `ethtool(8)`, systemd, kernel files.
#[derive(Debug)]
pub struct LiveHost {
    root: Root,
    ethtool: LiveEthtool,
    services: Systemd,
}

impl LiveHost {
    /// For the live root (`/`).
    pub fn new(root: &Root) -> Self {
        LiveHost {
            root: root.clone(),
            ethtool: LiveEthtool::new(),
            services: Systemd,
        }
    }
}

impl Backend for LiveHost {
    fn root(&self) -> &Root {
        &self.root
    }
    fn ethtool(&self) -> &dyn Ethtool {
        &self.ethtool
    }
    fn services(&self) -> &dyn Services {
        &self.services
    }
    /// A kernel file takes one line: the original without its newline.
    fn restore_file(&self, path: &str, raw: &str) -> Result<(), HostError> {
        self.root.write(path, raw.trim_end_matches('\n'))
    }
    fn effective_affinity(&self, _irq: u32, _cpus: &CpuSet) -> Result<Vec<FollowUp>, HostError> {
        Ok(Vec::new())
    }
}

/// A fixture tree (a copy of `tests/fixtures/*` or a `nettune capture`):
/// ethtool in `ethtool/<iface>.json`, no services, and no kernel behind the
/// files, so apply plays its part.
#[derive(Debug)]
pub struct FixtureHost {
    root: Root,
    ethtool: FixtureEthtool,
    services: NoServices,
}

impl FixtureHost {
    /// For the fixture at `root`.
    pub fn new(root: &Root) -> Self {
        FixtureHost {
            root: root.clone(),
            ethtool: FixtureEthtool::new(root),
            services: NoServices,
        }
    }
}

impl Backend for FixtureHost {
    fn root(&self) -> &Root {
        &self.root
    }
    fn ethtool(&self) -> &dyn Ethtool {
        &self.ethtool
    }
    fn services(&self) -> &dyn Services {
        &self.services
    }
    /// Byte for byte, so a rollback leaves the fixture identical.
    fn restore_file(&self, path: &str, raw: &str) -> Result<(), HostError> {
        let real = self.root.resolve_confined(path, true)?;
        let mut f = open_for_write(&real, Path::new(path), true)?;
        std::io::Write::write_all(&mut f, raw.as_bytes()).map_err(|e| HostError::io(path, e))
    }
    /// `effective_affinity` moves to the first intended CPU, as x86 does.
    fn effective_affinity(&self, irq: u32, cpus: &CpuSet) -> Result<Vec<FollowUp>, HostError> {
        let Some(first) = cpus.first() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (path, format) in effective_files(&self.root, irq) {
            let value = match format {
                ValueFormat::List => first.to_string(),
                _ => {
                    let original = self.root.read(&path)?;
                    let groups = u32::try_from(original.trim().split(',').count()).unwrap_or(1);
                    CpuSet::single(first).to_mask_groups(groups)
                }
            };
            out.push(FollowUp {
                knob: "effective_affinity",
                target: Target::File { path, format },
                value,
            });
        }
        Ok(out)
    }
}
