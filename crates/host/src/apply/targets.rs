//! What a plan or a journal may name. Both are files a user can edit (the
//! journal's checksum is not a secret), so every target is checked before
//! apply, rollback or verify touches it:
//!
//! - `file` targets: plain absolute paths of the kernel files nettune
//!   plans ([`knobpath::is_planned_kernel_file`]: sysctls under
//!   `/proc/sys/net/`, interface and queue files, IRQ affinity, the cpufreq
//!   governor, pm_qos), or exactly irqbalance's environment
//!   file (`/etc/default/irqbalance`, `/etc/sysconfig/irqbalance`), whose
//!   content must be plain `NAME=VALUE` lines ([`model::irqbalance_env`]);
//! - `created` targets: exactly the files, directories and link that
//!   `apply --persist` creates, each with its kind;
//! - names that become file names or command arguments (module, parameter,
//!   interface, ethtool attribute) match a strict character set; the only
//!   service is `irqbalance`;
//! - values that land in a modprobe.d snippet, a service state or a symlink
//!   are checked too (a newline in a module parameter would add a line, such
//!   as `install`, to the snippet).

use crate::error::HostError;
use crate::persist;
use crate::root::check_plain;
use model::irqbalance_env;
use model::knobpath;
use model::plan::{CreatedKind, Target};
use std::path::Path;

/// Services nettune starts and stops.
pub const SERVICES: [&str; 1] = ["irqbalance"];

/// Longest module, parameter or attribute name accepted.
const MAX_NAME: usize = 64;

/// Longest module parameter value accepted (per-port lists included).
const MAX_PARAM_VALUE: usize = 256;

fn bad(what: &'static str, name: &str, rule: &'static str) -> HostError {
    HostError::BadName {
        what,
        name: name.chars().take(80).collect(),
        rule,
    }
}

/// A name that becomes part of a file name: 1 to 64 of `A-Z a-z 0-9 _ -`,
/// not starting with `-` (so it is never read as an option either).
pub fn check_name(what: &'static str, name: &str) -> Result<(), HostError> {
    const RULE: &str = "1 to 64 of A-Z a-z 0-9 _ -, not starting with -";
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(bad(what, name, RULE))
    }
}

pub use crate::iface::check_iface;

/// A module nettune may write a snippet for and reload: one of the
/// drivers its tables know ([`knobpath::KNOWN_MODULES`]).
pub fn check_module(module: &str) -> Result<(), HostError> {
    if knobpath::KNOWN_MODULES.contains(&module) {
        Ok(())
    } else {
        Err(bad(
            "module",
            module,
            "not a driver nettune knows (e1000, e1000e, ixgbe, ixgbevf); no snippet is written and nothing is loaded",
        ))
    }
}

fn refused(path: &str, why: &'static str) -> HostError {
    HostError::Refused {
        path: path.into(),
        why,
    }
}

/// Check that `t` is something nettune may read, write, restore or remove.
pub fn check_target(t: &Target) -> Result<(), HostError> {
    match t {
        Target::File { path, .. } => {
            check_plain(Path::new(path))?;
            if !knobpath::is_planned_kernel_file(path) && !is_irqbalance_env(path) {
                return Err(refused(
                    path,
                    "not a file nettune plans (only sysctls under /proc/sys/net, interface and queue files under /sys/class/net, /proc/irq/N affinity, the cpufreq governor, pm_qos_resume_latency_us and irqbalance's environment file)",
                ));
            }
            Ok(())
        }
        Target::IrqAffinity { iface, .. } => check_iface(iface),
        Target::Ethtool { iface, attr, .. } => {
            check_iface(iface)?;
            check_name("ethtool attribute", attr)
        }
        Target::Service { name } => {
            if SERVICES.contains(&name.as_str()) {
                Ok(())
            } else {
                Err(bad("service", name, "nettune manages only irqbalance"))
            }
        }
        Target::ModuleParam { module, param } => {
            check_name("module", module)?;
            check_module(module)?;
            check_name("module parameter", param)
        }
        Target::Created { path, what } => {
            check_plain(Path::new(path))?;
            if persist::allowed(path, *what) {
                Ok(())
            } else {
                Err(refused(
                    path,
                    "not one of the files `apply --persist` creates (or not of that kind)",
                ))
            }
        }
    }
}

/// Whether `path` is irqbalance's environment file.
pub fn is_irqbalance_env(path: &str) -> bool {
    irqbalance_env::ENV_PATHS.contains(&path)
}

fn bad_value(t: &Target, value: &str, why: &'static str) -> HostError {
    HostError::Refused {
        path: format!(
            "{} = {:?}",
            t.describe(),
            value.chars().take(80).collect::<String>()
        )
        .into(),
        why,
    }
}

/// A module parameter value: 1 to 256 of `A-Z a-z 0-9 _ , . -`
/// (numbers and per-port lists such as `1,1,1,1`).
fn param_value_ok(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= MAX_PARAM_VALUE
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b'.' | b'-'))
}

/// A snippet's text as nettune writes it: comment lines and
/// `options MODULE PARAM=VALUE` lines only.
fn snippet_ok(module: &str, text: &str) -> bool {
    text.len() <= 64 * 1024
        && text.lines().all(|l| {
            if l.trim().is_empty() {
                return true;
            }
            if let Some(c) = l.strip_prefix('#') {
                return !c.chars().any(|c| c.is_control() && c != '\t');
            }
            let mut w = l.split(' ');
            w.next() == Some("options")
                && w.next() == Some(module)
                && w.all(|kv| {
                    kv.split_once('=').is_some_and(|(k, v)| {
                        check_name("module parameter", k).is_ok() && param_value_ok(v)
                    })
                })
        })
}

/// Check a value to be written to `t` (a planned value, or a journaled
/// original being restored).
pub fn check_value(t: &Target, value: &str) -> Result<(), HostError> {
    match t {
        Target::Service { .. } => {
            if matches!(value, "running" | "stopped") {
                Ok(())
            } else {
                Err(bad_value(t, value, "a service state is running or stopped"))
            }
        }
        Target::File { path, .. } if is_irqbalance_env(path) => {
            if irqbalance_env::is_simple(value) {
                Ok(())
            } else {
                Err(bad_value(t, value, irqbalance_env::NOT_SIMPLE))
            }
        }
        Target::ModuleParam { module, .. } => {
            let is_text = value.starts_with("options ") || value.starts_with('#');
            if (is_text && snippet_ok(module, value)) || (!is_text && param_value_ok(value)) {
                Ok(())
            } else {
                Err(bad_value(
                    t,
                    value,
                    "a module parameter value is 1 to 256 of A-Z a-z 0-9 _ , . - (a snippet holds only comments and options lines)",
                ))
            }
        }
        Target::Created {
            what: CreatedKind::Symlink,
            ..
        } => {
            if !value.is_empty() && value.len() <= 4096 && !value.contains('\0') {
                Ok(())
            } else {
                Err(bad_value(t, value, "not a symlink target"))
            }
        }
        _ => {
            if value.contains('\0') {
                Err(bad_value(t, value, "holds a NUL byte"))
            } else {
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::plan::ValueFormat;

    fn file(p: &str) -> Target {
        Target::File {
            path: p.into(),
            format: ValueFormat::Text,
        }
    }

    #[test]
    fn kernel_files_only() {
        assert!(check_target(&file("/proc/sys/net/core/rmem_max")).is_ok());
        assert!(check_target(&file("/sys/class/net/eth0/queues/rx-0/rps_cpus")).is_ok());
        assert!(check_target(&file("/proc/irq/5/effective_affinity")).is_ok());
        for p in [
            "/proc/sys/kernel/core_pattern",
            "/proc/sys/kernel/modprobe",
            "/sys/kernel/uevent_helper",
            "/etc/passwd",
            "/proc/sys/../../etc/passwd",
            "/sys/./x",
            "/sys//x",
            "sys/x",
            "/proc/sysx",
            "/proc/self/mem",
        ] {
            assert!(check_target(&file(p)).is_err(), "{p}");
        }
    }

    /// Issue 17 item 6: irqbalance's environment file, and no other file
    /// under /etc, is a `file` target; its content must be plain assignments.
    #[test]
    fn irqbalance_env_file_only() {
        for p in ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"] {
            assert!(check_target(&file(p)).is_ok(), "{p}");
            assert!(check_value(&file(p), "IRQBALANCE_ARGS=\"--banirq=5\"\n").is_ok());
            assert!(check_value(&file(p), "IRQBALANCE_ARGS=\"$(reboot)\"\n").is_err());
            assert!(check_value(&file(p), "IRQBALANCE_ARGS=x\nexport PATH=/tmp\n").is_err());
        }
        for p in [
            "/etc/default/irqbalance2",
            "/etc/default/grub",
            "/etc/sysconfig/../default/irqbalance",
        ] {
            assert!(check_target(&file(p)).is_err(), "{p}");
        }
    }

    #[test]
    fn names() {
        for ok in ["e1000e", "InterruptThrottleRate", "rx-usecs", "adaptive_rx"] {
            assert!(check_name("x", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "..",
            "a/b",
            "../x",
            "-x",
            "a b",
            "a.b",
            "a\nb",
            &"x".repeat(65),
        ] {
            assert!(check_name("x", bad).is_err(), "{bad}");
        }
        for ok in ["eth0", "ens1f0", "eth0.100", "veth-a_1"] {
            assert!(check_iface(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "-L", "a:1", "a b", "sixteen-chars-xx"] {
            assert!(check_iface(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values() {
        let m = Target::ModuleParam {
            module: "e1000e".into(),
            param: "InterruptThrottleRate".into(),
        };
        assert!(check_value(&m, "3").is_ok());
        // Issue 35: only the drivers nettune's tables know.
        for module in ["nf_conntrack", "bluetooth", "dummy"] {
            let t = Target::ModuleParam {
                module: module.into(),
                param: "x".into(),
            };
            let e = check_target(&t).unwrap_err().to_string();
            assert!(e.contains(module), "{e}");
        }
        assert!(check_value(&m, "1,1,1,1").is_ok());
        assert!(check_value(&m, "1\ninstall e1000e /bin/sh").is_err());
        assert!(check_value(
            &m,
            "# Written by nettune\noptions e1000e InterruptThrottleRate=3\n"
        )
        .is_ok());
        assert!(check_value(&m, "# x\ninstall e1000e /bin/sh -c id\n").is_err());
        assert!(check_value(&m, "options e1000e a=1 b=$(id)\n").is_err());
        let s = Target::Service {
            name: "irqbalance".into(),
        };
        assert!(check_value(&s, "stopped").is_ok());
        assert!(check_value(&s, "masked").is_err());
        assert!(check_target(&Target::Service {
            name: "sshd".into()
        })
        .is_err());
        let c = |p: &str, what| Target::Created {
            path: p.into(),
            what,
        };
        assert!(check_target(&c(persist::UNIT_PATH, CreatedKind::File)).is_ok());
        assert!(check_target(&c("/etc", CreatedKind::Dir)).is_ok());
        assert!(check_target(&c(persist::UNIT_PATH, CreatedKind::Dir)).is_err());
        assert!(check_target(&c("/etc/shadow", CreatedKind::File)).is_err());
        assert!(check_target(&c("/../x", CreatedKind::File)).is_err());
    }
}
