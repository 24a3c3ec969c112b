//! Foreign owners: other software that writes IRQ affinity, sysctls or
//! coalescing (irqbalance, tuned), found under `/proc` and `/etc/tuned`.

use crate::readctx::Ctx;
use model::snapshot::{EnvFile, ForeignOwners, Process, Tuned};

/// Whether a process with `comm` and NUL-separated `cmdline` is the tuned daemon
/// (a Python script: `comm` is `tuned`, or argv names `.../tuned`).
pub fn is_tuned(comm: &str, cmdline: &str) -> bool {
    if comm == "tuned" {
        return true;
    }
    cmdline
        .split('\0')
        .take(3)
        .any(|a| a.rsplit('/').next() == Some("tuned"))
}

/// `cmdline` with NULs as spaces, trailing NUL dropped.
pub fn cmdline_text(raw: &str) -> String {
    raw.trim_end_matches('\0')
        .replace('\0', " ")
        .trim()
        .to_string()
}

pub(crate) fn read_owners(ctx: &Ctx<'_>) -> ForeignOwners {
    let mut irqbalance = None;
    let mut tuned_proc = None;
    let mut pids: Vec<u32> = ctx
        .root
        .list("/proc")
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.parse().ok())
        .collect();
    pids.sort_unstable();
    for pid in pids {
        // Processes come and go: a vanished or unreadable one is not worth a note.
        let Ok(comm) = ctx.root.read_trim(format!("/proc/{pid}/comm")) else {
            continue;
        };
        let raw = ctx
            .root
            .read(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default();
        if comm == "irqbalance" && irqbalance.is_none() {
            irqbalance = Some(Process {
                pid,
                cmdline: cmdline_text(&raw),
            });
        } else if tuned_proc.is_none() && is_tuned(&comm, &raw) {
            tuned_proc = Some(Process {
                pid,
                cmdline: cmdline_text(&raw),
            });
        }
    }
    for p in irqbalance.iter().chain(tuned_proc.iter()) {
        ctx.touch(format!("/proc/{}/comm", p.pid));
        ctx.touch(format!("/proc/{}/cmdline", p.pid));
    }
    let active_profile = ctx
        .opt("/etc/tuned/active_profile")
        .filter(|s| !s.is_empty());
    let tuned = if tuned_proc.is_some() || active_profile.is_some() {
        Some(Tuned {
            process: tuned_proc,
            active_profile,
        })
    } else {
        None
    };
    let irqbalance_env = model::irqbalance_env::ENV_PATHS.iter().find_map(|path| {
        let content = ctx.root.read(path).ok()?;
        ctx.touch(*path);
        Some(EnvFile {
            path: (*path).to_string(),
            content,
        })
    });
    ForeignOwners {
        irqbalance,
        tuned,
        irqbalance_env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuned_detection() {
        assert!(is_tuned("tuned", ""));
        assert!(is_tuned(
            "python3",
            "/usr/bin/python3\0-Es\0/usr/sbin/tuned\0-l\0"
        ));
        assert!(is_tuned("python3", "/usr/bin/python3\0/usr/sbin/tuned\0"));
        assert!(!is_tuned("python3", "/usr/bin/python3\0tuned-adm\0"));
        assert!(!is_tuned("sshd", "sshd: /usr/sbin/sshd\0"));
    }

    #[test]
    fn cmdline() {
        assert_eq!(
            cmdline_text("/usr/sbin/irqbalance\0--foreground\0"),
            "/usr/sbin/irqbalance --foreground"
        );
        assert_eq!(cmdline_text(""), "");
    }
}
