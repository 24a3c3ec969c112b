//! Which changes of a plan can cut the controller off from the host
//! (issue 19 item 6): those are applied with a confirm deadline, as a
//! router's `commit confirmed`, and rolled back by the host itself unless
//! the controller confirms over a fresh connection (docs/fleet.md, "Confirm
//! deadline").
//!
//! A channel count, ring size or module parameter (a driver reload) resets
//! the NIC's queues on any interface, so it is risky wherever it is; an
//! interrupt moderation, IRQ affinity or packet steering (RPS/XPS, flow
//! limit) change is risky on the interface that carries the controller's
//! connection (the *path*). On an ssh transport the agent finds the path
//! from `SSH_CONNECTION` ([`ssh_server_addr`], [`path_ifaces`]); for netns
//! and local transports no interface is the path unless the caller says so.

use model::plan::{EthtoolGroup, Plan, Target};
use std::net::IpAddr;

/// Why a change can cut the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Risk {
    /// A channel count change: the NIC's queues are rebuilt.
    Channels,
    /// A ring size change: the NIC's queues are rebuilt.
    Rings,
    /// A module parameter: it takes effect by reloading the driver.
    ModuleParam,
    /// Interrupt moderation of the path's interface.
    PathCoalesce,
    /// An IRQ of the path's interface moved.
    PathIrq,
    /// RPS/XPS or flow-limit steering of the path's interface.
    PathSteering,
    /// An offload of the path's interface: some drivers reset the NIC to
    /// change one.
    PathOffload,
}

impl Risk {
    /// A short phrase for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Risk::Channels => "a channel count change rebuilds the NIC's queues",
            Risk::Rings => "a ring size change rebuilds the NIC's queues",
            Risk::ModuleParam => "a module parameter takes effect by reloading the driver",
            Risk::PathCoalesce => "interrupt moderation of the controller's interface",
            Risk::PathIrq => "an IRQ of the controller's interface moves",
            Risk::PathSteering => "packet steering of the controller's interface",
            Risk::PathOffload => {
                "an offload of the controller's interface (some drivers reset the NIC)"
            }
        }
    }
}

/// The interface a `/sys/class/net/IFACE/...` path names, if any.
pub fn sysfs_iface(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/sys/class/net/")?;
    let iface = rest.split('/').next()?;
    (!iface.is_empty() && rest.len() > iface.len()).then_some(iface)
}

/// Whether a sysfs path is a queue's steering file (`rps_cpus`,
/// `rps_flow_cnt`, `xps_cpus`, `xps_rxqs`).
fn is_steering(path: &str) -> bool {
    let leaf = path.rsplit('/').next().unwrap_or("");
    path.contains("/queues/") && (leaf.starts_with("rps_") || leaf.starts_with("xps_"))
}

/// Why change `t` can cut the path through the interfaces `path`, or `None`.
pub fn target_risk(t: &Target, path: &[String]) -> Option<Risk> {
    let on_path = |i: &str| path.iter().any(|p| p == i);
    match t {
        Target::Ethtool { group, iface, .. } => match group {
            EthtoolGroup::Channels => Some(Risk::Channels),
            EthtoolGroup::Rings => Some(Risk::Rings),
            EthtoolGroup::Coalesce => on_path(iface).then_some(Risk::PathCoalesce),
            EthtoolGroup::Features => on_path(iface).then_some(Risk::PathOffload),
        },
        Target::ModuleParam { .. } => Some(Risk::ModuleParam),
        Target::IrqAffinity { iface, .. } => on_path(iface).then_some(Risk::PathIrq),
        Target::File { path: p, .. } => {
            let iface = sysfs_iface(p)?;
            (on_path(iface) && is_steering(p)).then_some(Risk::PathSteering)
        }
        Target::Service { .. } | Target::Created { .. } => None,
    }
}

/// The plan's changes that can cut the path through `path`: (index in
/// `plan.changes`, why), in plan order. Empty: no confirm deadline needed.
pub fn risky_changes(plan: &Plan, path: &[String]) -> Vec<(usize, Risk)> {
    plan.changes
        .iter()
        .enumerate()
        .filter_map(|(i, c)| target_risk(&c.target, path).map(|r| (i, r)))
        .collect()
}

/// The server address of an `SSH_CONNECTION` value (`CLIENT_IP CLIENT_PORT
/// SERVER_IP SERVER_PORT`): the address the controller reached this host at.
/// `None` when the value has another shape.
pub fn ssh_server_addr(ssh_connection: &str) -> Option<IpAddr> {
    let w: Vec<&str> = ssh_connection.split_whitespace().collect();
    match w.as_slice() {
        [_, _, server, port] if port.parse::<u16>().is_ok() => {
            // An IPv6 address may carry a zone (`fe80::1%eth0`).
            let addr = server.split('%').next().unwrap_or(server);
            addr.parse().ok()
        }
        _ => None,
    }
}

/// The interfaces holding `server` among `addrs` (interface, address), as
/// `ip -o addr` lists them: the path the controller's connection takes.
pub fn path_ifaces(server: IpAddr, addrs: &[(String, IpAddr)]) -> Vec<String> {
    let mut out: Vec<String> = addrs
        .iter()
        .filter(|(_, a)| *a == server)
        .map(|(i, _)| i.clone())
        .collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::plan::{Change, NetnsScope, Origin, Phase, PlanOptions, ValueFormat};

    fn change(target: Target) -> Change {
        Change {
            phase: Phase::Sysctls,
            knob: "k".into(),
            target,
            before: None,
            after: "1".into(),
            rule: Origin::Experiment,
            reason: "test".into(),
            source: "test".into(),
        }
    }

    fn eth(iface: &str, group: EthtoolGroup) -> Target {
        Target::Ethtool {
            iface: iface.into(),
            group,
            attr: "rx".into(),
        }
    }

    fn file(p: &str) -> Target {
        Target::File {
            path: p.into(),
            format: ValueFormat::Text,
        }
    }

    fn plan(targets: Vec<Target>) -> Plan {
        Plan {
            schema_version: 1,
            profile: "t".into(),
            profile_toml: None,
            fingerprint: "f".into(),
            hostname: None,
            options: PlanOptions::default(),
            scope: NetnsScope::Init,
            changes: targets.into_iter().map(change).collect(),
            notes: vec![],
        }
    }

    #[test]
    fn queue_rebuilds_and_driver_reloads_are_risky_on_any_interface() {
        let none: &[String] = &[];
        assert_eq!(
            target_risk(&eth("eth1", EthtoolGroup::Channels), none),
            Some(Risk::Channels)
        );
        assert_eq!(
            target_risk(&eth("eth1", EthtoolGroup::Rings), none),
            Some(Risk::Rings)
        );
        let m = Target::ModuleParam {
            module: "mlx5_core".into(),
            param: "x".into(),
        };
        assert_eq!(target_risk(&m, none), Some(Risk::ModuleParam));
    }

    #[test]
    fn moderation_irqs_and_steering_are_risky_only_on_the_path() {
        let path = vec!["eth0".to_string()];
        let irq = |i: &str| Target::IrqAffinity {
            irq: 40,
            iface: i.into(),
        };
        let p = plan(vec![
            eth("eth0", EthtoolGroup::Coalesce),
            eth("eth1", EthtoolGroup::Coalesce),
            irq("eth0"),
            irq("eth1"),
            file("/sys/class/net/eth0/queues/rx-0/rps_cpus"),
            file("/sys/class/net/eth0/queues/tx-3/xps_cpus"),
            file("/sys/class/net/eth1/queues/rx-0/rps_cpus"),
            file("/sys/class/net/eth0/tx_queue_len"),
            file("/proc/sys/net/core/rmem_max"),
            Target::Service {
                name: "irqbalance".into(),
            },
        ]);
        assert_eq!(
            risky_changes(&p, &path),
            vec![
                (0, Risk::PathCoalesce),
                (2, Risk::PathIrq),
                (4, Risk::PathSteering),
                (5, Risk::PathSteering)
            ]
        );
        // netns and local transports: no interface is the path.
        assert!(risky_changes(&p, &[]).is_empty());
    }

    #[test]
    fn the_path_comes_from_ssh_connection() {
        let a = ssh_server_addr("10.0.0.9 51234 10.0.0.5 22").unwrap();
        assert_eq!(a, "10.0.0.5".parse::<IpAddr>().unwrap());
        assert_eq!(
            ssh_server_addr("fe80::9 40000 fe80::5%eth0 22"),
            Some("fe80::5".parse().unwrap())
        );
        for bad in ["", "10.0.0.9 51234 10.0.0.5", "a b c d", "1 2 10.0.0.5 x"] {
            assert_eq!(ssh_server_addr(bad), None, "{bad}");
        }
        let addrs = vec![
            ("lo".to_string(), "127.0.0.1".parse().unwrap()),
            ("eth0".to_string(), "10.0.0.5".parse().unwrap()),
            ("eth1".to_string(), "10.1.0.5".parse().unwrap()),
        ];
        assert_eq!(path_ifaces(a, &addrs), vec!["eth0".to_string()]);
        assert!(path_ifaces("192.0.2.1".parse().unwrap(), &addrs).is_empty());
    }
}
