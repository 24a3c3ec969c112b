//! CPU time of the processes that are not nettune's: read from every
//! `/proc/PID/stat` at the edges of a measured window, so a run can say how
//! much of the machine something else took while it measured.
//!
//! Kernel threads (children of `kthreadd`, PID 2) are left out: their time is
//! mostly the kernel's work for the traffic itself (ksoftirqd, kworkers).
//! A process that exits inside the window is not seen, so the figure is a
//! lower bound; one that starts inside it counts from zero.

use crate::Root;
use model::parse::procpid::parse_pid_stat;
use std::collections::BTreeMap;

/// Most processes read at one edge (a bound on the work and memory).
pub const MAX_PROCESSES: usize = 65_536;

/// The command name of nettune's own processes (client, server, agents).
pub const OWN_COMM: &str = "nettune";

/// CPU ticks (utime + stime, USER_HZ) of each user-space process but
/// nettune's, at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OthersMark {
    ticks: BTreeMap<u32, (u64, String)>,
}

impl OthersMark {
    /// Read every `/proc/PID/stat` under `root`; processes whose command is
    /// [`OWN_COMM`] or this process's own (a renamed binary: the lab's
    /// servers run the same executable) and kernel threads are left out.
    /// Unreadable entries (a process gone between the listing and the read)
    /// are skipped.
    pub fn read(root: &Root) -> OthersMark {
        let mut ticks = BTreeMap::new();
        let me = root.read_trim("/proc/self/comm").unwrap_or_default();
        let Ok(names) = root.list("/proc") else {
            return OthersMark { ticks };
        };
        let mut buf = String::new();
        for name in names
            .iter()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            if ticks.len() >= MAX_PROCESSES {
                break;
            }
            buf.clear();
            let path = format!("/proc/{name}/stat");
            if !matches!(root.read_into(&path, &mut buf), Ok(true)) {
                continue;
            }
            let Ok(st) = parse_pid_stat(&buf) else {
                continue;
            };
            let own = st.comm == OWN_COMM || (!me.is_empty() && st.comm == me);
            if own || st.pid == 2 || ppid(&buf) == Some(2) {
                continue;
            }
            ticks.insert(st.pid, (st.utime.saturating_add(st.stime), st.comm));
        }
        OthersMark { ticks }
    }

    /// From pairs of (pid, ticks, command), for tests.
    pub fn from_ticks(list: &[(u32, u64, &str)]) -> OthersMark {
        OthersMark {
            ticks: list
                .iter()
                .map(|(p, t, c)| (*p, (*t, c.to_string())))
                .collect(),
        }
    }

    /// The ticks the other processes used between `earlier` and `self`, and
    /// the command of the one that used most (with its ticks): a process
    /// seen only now counts whole; a PID whose ticks went down was reused and
    /// counts whole too.
    pub fn since(&self, earlier: &OthersMark) -> OthersUse {
        let mut total = 0u64;
        let mut top: Option<(u64, &str)> = None;
        for (pid, (now, comm)) in &self.ticks {
            let before = earlier
                .ticks
                .get(pid)
                .filter(|(t, c)| t <= now && c == comm)
                .map_or(0, |(t, _)| *t);
            let used = now.saturating_sub(before);
            total = total.saturating_add(used);
            if used > 0 && top.is_none_or(|(t, _)| used > t) {
                top = Some((used, comm));
            }
        }
        OthersUse {
            ticks: total,
            top: top.map(|(t, c)| (c.to_string(), t)),
        }
    }
}

/// What [`OthersMark::since`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OthersUse {
    /// Ticks (USER_HZ) of all other processes.
    pub ticks: u64,
    /// The busiest one: its command and ticks.
    pub top: Option<(String, u64)>,
}

/// Field 4 of `/proc/PID/stat`, the parent PID (after the last `)`).
fn ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn others_since_counts_new_and_grown_processes_and_names_the_busiest() {
        let a = OthersMark::from_ticks(&[(10, 100, "bash"), (11, 5, "sshd"), (12, 50, "gone")]);
        let b = OthersMark::from_ticks(&[(10, 180, "bash"), (11, 6, "sshd"), (13, 30, "yes")]);
        let u = b.since(&a);
        assert_eq!(u.ticks, 80 + 1 + 30);
        assert_eq!(u.top, Some(("bash".into(), 80)));
    }

    #[test]
    fn a_reused_pid_counts_whole() {
        let a = OthersMark::from_ticks(&[(10, 500, "old")]);
        let b = OthersMark::from_ticks(&[(10, 20, "new")]);
        assert_eq!(b.since(&a).ticks, 20);
    }

    #[test]
    fn ppid_is_read_after_the_last_paren() {
        assert_eq!(ppid("7 (a) b) S 2 7 0"), Some(2));
        assert_eq!(ppid("7 (bash) R 1 7 0"), Some(1));
        assert_eq!(ppid("garbage"), None);
    }

    /// Live: this process counts as one of ours (whatever its binary is
    /// called), and nettune's name is left out.
    #[test]
    fn live_read_leaves_out_this_process_and_nettunes() {
        let root = Root::live();
        let a = OthersMark::read(&root);
        let me = std::process::id();
        assert!(!a.ticks.contains_key(&me), "this process is one of ours");
        assert!(!a.ticks.values().any(|(_, c)| c == OWN_COMM));
        assert!(!a.ticks.is_empty(), "init at least is another process");
    }
}
