//! Facts the planner needs beyond the snapshot ([`HostExtras`]): the network
//! namespace the root is read in, softnet totals and PM QoS files. Read
//! through a [`Root`] like the snapshot, so a fixture stands in for `/`.

use crate::root::Root;
use model::knobpath;
use model::plan::{HostExtras, NetnsScope, SoftnetTotals};
use model::snapshot::HostSnapshot;

/// Read the extras for `snap` under `root`. Nothing here fails: a file that
/// cannot be read is absent from the result (the planner notes what it lacks).
pub fn read_extras(root: &Root, snap: &HostSnapshot) -> HostExtras {
    let scope = detect_scope(root);
    let softnet = root
        .read(knobpath::SOFTNET_STAT)
        .ok()
        .and_then(|t| SoftnetTotals::parse(&t).ok());
    let mut pm_qos = std::collections::BTreeMap::new();
    for c in &snap.cpus {
        if let Ok(Some(v)) = root.read_opt(knobpath::pm_qos_resume_latency_path(c.id.0)) {
            pm_qos.insert(c.id.0, v);
        }
    }
    let uptime_s = root
        .read("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .filter(|u| u.is_finite() && *u > 0.0);
    HostExtras {
        scope,
        softnet,
        uptime_s,
        pm_qos,
    }
}

/// Whether the root's `/proc/self` lives in a child network namespace:
/// `/proc/self/ns/net` differs from `/proc/1/ns/net`; when PID 1's link is
/// unreadable (no CAP_SYS_PTRACE, as in some sandboxes), whether our namespace
/// is one that `ip netns` created (`/run/netns/*` has the same nsfs inode).
pub fn detect_scope(root: &Root) -> NetnsScope {
    use std::os::unix::fs::MetadataExt;
    match (
        root.read_link("/proc/self/ns/net"),
        root.read_link("/proc/1/ns/net"),
    ) {
        (Ok(a), Ok(b)) => {
            return if a != b {
                NetnsScope::Child
            } else {
                NetnsScope::Init
            }
        }
        (Err(_), _) => return NetnsScope::Init,
        _ => {}
    }
    let ino = |p: &str| {
        root.resolve(p)
            .ok()
            .and_then(|r| std::fs::metadata(r).ok())
            .map(|m| m.ino())
    };
    let Some(me) = ino("/proc/self/ns/net") else {
        return NetnsScope::Init;
    };
    let named = root.list("/run/netns").unwrap_or_default();
    if named
        .iter()
        .any(|n| ino(&format!("/run/netns/{n}")) == Some(me))
    {
        NetnsScope::Child
    } else {
        NetnsScope::Init
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name)
    }

    #[test]
    fn softnet_and_pm_qos_come_from_the_root() {
        let root = Root::new(fixture("tuner-two-socket-32c"));
        let snap = crate::read_snapshot(&root);
        let ex = read_extras(&root, &snap);
        let text = root.read(knobpath::SOFTNET_STAT).unwrap();
        assert_eq!(ex.softnet, Some(SoftnetTotals::parse(&text).unwrap()));
        assert!(!ex.pm_qos.is_empty());
        for c in &snap.cpus {
            let p = knobpath::pm_qos_resume_latency_path(c.id.0);
            assert_eq!(ex.pm_qos.get(&c.id.0).cloned(), root.read_opt(&p).unwrap());
        }
        assert_eq!(ex.scope, NetnsScope::Init);
    }

    #[test]
    fn scope_compares_our_namespace_with_pid_1s() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        assert_eq!(detect_scope(&root), NetnsScope::Init, "no links");
        for pid in ["self", "1"] {
            std::fs::create_dir_all(t.path().join(format!("proc/{pid}/ns"))).unwrap();
        }
        let link = |pid: &str, target: &str| {
            let p = t.path().join(format!("proc/{pid}/ns/net"));
            let _ = std::fs::remove_file(&p);
            std::os::unix::fs::symlink(target, p).unwrap();
        };
        link("self", "net:[4026532001]");
        link("1", "net:[4026531840]");
        assert_eq!(detect_scope(&root), NetnsScope::Child);
        link("self", "net:[4026531840]");
        assert_eq!(detect_scope(&root), NetnsScope::Init);
    }
}
