#![allow(clippy::unwrap_used)]

use super::*;
use model::plan::{EthtoolGroup, ValueFormat};

/// `nettune inspect --json` inside a fresh namespace holding a veth pair
/// (kernel 6.18, 2 CPUs): veth reports no coalescing, rx/tx channels only.
fn veth() -> HostSnapshot {
    serde_json::from_str(include_str!("testdata/netns-veth-6.18.json")).unwrap()
}

fn plan(levels: &[(Knob, Level)]) -> Result<CellPlan, NotApplicable> {
    cell_plan(&veth(), NetnsScope::Child, levels)
}

#[test]
fn every_knob_has_exactly_one_kind() {
    for k in Knob::ALL {
        let n = KINDS.iter().filter(|kind| kind.handles(*k)).count();
        assert_eq!(n, 1, "{}", k.name());
    }
}

#[test]
fn sysctl_levels_write_proc_sys_with_the_snapshot_value_before() {
    let p = plan(&[
        (Knob::TcpRmem, Level::Triple([4096, 87380, 1_250_000])),
        (Knob::TcpTwReuse, Level::Int(1)),
        (Knob::IpLocalPortRange, Level::Range([32768, 33791])),
    ])
    .unwrap();
    let c = &p.plan.changes;
    assert_eq!(c.len(), 3);
    assert_eq!(
        c[0].target,
        Target::File {
            path: "/proc/sys/net/ipv4/tcp_rmem".into(),
            format: ValueFormat::Text
        }
    );
    assert_eq!(c[0].before.as_deref(), Some("4096 131072 33554432"));
    assert!(ValueFormat::Text.same(&c[0].after, "4096 87380 1250000"));
    assert_eq!(c[1].after, "1");
    assert_eq!(c[1].before.as_deref(), Some("2"));
    assert!(ValueFormat::Text.same(&c[2].after, "32768 33791"));
    assert_eq!(p.plan.fingerprint, veth().fingerprint());
    assert_eq!(p.plan.scope, NetnsScope::Child);
    assert!(p.bench_args.is_empty());
}

#[test]
fn congestion_control_must_be_available() {
    // Per socket: a namespace cannot default to cubic (not allowed there).
    let p = plan(&[(Knob::CongestionControl, Level::Name("cubic".into()))]).unwrap();
    assert!(p.plan.changes.is_empty());
    assert_eq!(p.bench_args, ["--congestion", "cubic"]);
    let e = plan(&[(Knob::CongestionControl, Level::Name("vegas".into()))]).unwrap_err();
    assert_eq!(e.knob, "congestion_control");
    assert!(e.reason.contains("reno bbr cubic"), "{e}");
}

#[test]
fn steering_writes_every_queue_of_every_device_but_lo() {
    let p = plan(&[(Knob::RpsCpus, Level::Cpus(vec![0, 1]))]).unwrap();
    let paths: Vec<String> = p.plan.changes.iter().map(|c| c.target.describe()).collect();
    assert_eq!(
        paths,
        [
            "/sys/class/net/veth0/queues/rx-0/rps_cpus",
            "/sys/class/net/veth1/queues/rx-0/rps_cpus"
        ]
    );
    assert!(ValueFormat::Mask.same(&p.plan.changes[0].after, "3"));
    let off = plan(&[(Knob::RpsCpus, Level::Cpus(vec![]))]).unwrap();
    assert!(ValueFormat::Mask.same(&off.plan.changes[0].after, "0"));
    let x = plan(&[(Knob::XpsCpus, Level::Cpus(vec![1]))]).unwrap();
    assert!(x.plan.changes[0]
        .target
        .describe()
        .ends_with("tx-0/xps_cpus"));
    let f = plan(&[(Knob::RpsFlowCnt, Level::Int(4096))]).unwrap();
    assert_eq!(f.plan.changes[0].after, "4096");
    let e = plan(&[(Knob::RpsCpus, Level::Cpus(vec![7]))]).unwrap_err();
    assert!(e.reason.contains("CPU 7 is not online"), "{e}");
}

#[test]
fn napi_knobs_write_the_device_files() {
    let p = plan(&[
        (Knob::GroFlushTimeout, Level::Int(20_000)),
        (Knob::NapiDeferHardIrqs, Level::Int(2)),
        (Knob::ThreadedNapi, Level::Bool(true)),
    ])
    .unwrap();
    let d: Vec<(String, String)> = p
        .plan
        .changes
        .iter()
        .map(|c| (c.target.describe(), c.after.clone()))
        .collect();
    assert!(d.contains(&(
        "/sys/class/net/veth0/gro_flush_timeout".into(),
        "20000".into()
    )));
    assert!(d.contains(&(
        "/sys/class/net/veth1/napi_defer_hard_irqs".into(),
        "2".into()
    )));
    assert!(d.contains(&("/sys/class/net/veth0/threaded".into(), "1".into())));
}

#[test]
fn coalescing_on_veth_is_not_applicable_with_the_drivers_reason() {
    let e = plan(&[(Knob::CoalesceRxUsecs, Level::Int(50))]).unwrap_err();
    assert_eq!(e.knob, "coalesce_rx_usecs");
    assert!(e.reason.contains("does not report coalescing"), "{e}");
    assert_eq!(
        e.to_string().split(':').next(),
        Some("coalesce_rx_usecs=50")
    );
}

#[test]
fn channels_on_veth_set_rx_and_tx_within_the_maximum() {
    let p = plan(&[(Knob::Channels, Level::Int(2))]).unwrap();
    let c = &p.plan.changes[0];
    assert_eq!(
        c.target,
        Target::Ethtool {
            iface: "veth0".into(),
            group: EthtoolGroup::Channels,
            attr: "rx".into()
        }
    );
    assert_eq!(p.plan.changes.len(), 4);
    let e = plan(&[(Knob::Channels, Level::Int(3))]).unwrap_err();
    assert!(e.reason.contains("at most 2"), "{e}");
}

#[test]
fn bench_options_become_bench_arguments_not_changes() {
    let p = plan(&[
        (Knob::Flows, Level::Int(4)),
        (Knob::BusyPoll, Level::Int(50)),
        (Knob::CpuPin, Level::Cpus(vec![0, 1])),
        (Knob::Sndbuf, Level::Int(0)),
        (Knob::Rcvbuf, Level::Int(1_662_500)),
        (Knob::ForceBuffers, Level::Bool(true)),
    ])
    .unwrap();
    assert!(p.plan.changes.is_empty());
    assert_eq!(
        p.bench_args,
        [
            "--flows",
            "4",
            "--busy-poll",
            "50",
            "--cpus",
            "0-1",
            "--rcvbuf",
            "1662500",
            "--force-buffers"
        ]
    );
    let p = plan(&[(Knob::ForceBuffers, Level::Bool(false))]).unwrap();
    assert!(p.bench_args.is_empty(), "{:?}", p.bench_args);
}

#[test]
fn profiles_plan_through_the_planner_and_untuned_changes_nothing() {
    let u = plan(&[(Knob::Profile, Level::Name("untuned".into()))]).unwrap();
    assert!(u.plan.changes.is_empty());
    assert_eq!(u.plan.profile, "untuned");
    let e = plan(&[(Knob::Profile, Level::Name("nosuch".into()))]).unwrap_err();
    assert!(e.reason.contains("no such profile"), "{e}");
    // A built-in profile plans without error on a namespace.
    assert!(plan(&[(Knob::Profile, Level::Name("latency".into()))]).is_ok());
}

#[test]
fn a_knob_absent_on_the_host_is_not_applicable() {
    let mut s = veth();
    s.sysctls.remove("net.ipv4.tcp_tw_reuse");
    let e = cell_plan(&s, NetnsScope::Child, &[(Knob::TcpTwReuse, Level::Int(1))]).unwrap_err();
    assert!(e.reason.contains("absent"), "{e}");
    s.interfaces.retain(|i| i.name == "lo");
    let e = cell_plan(
        &s,
        NetnsScope::Child,
        &[(Knob::GroFlushTimeout, Level::Int(1))],
    )
    .unwrap_err();
    assert!(e.reason.contains("no interface but loopback"), "{e}");
}

/// The veth snapshot with its devices replaced by NICs whose ethtool state
/// is a fixture's `ethtool/<iface>.json` (the shape `nettune capture` writes).
fn with_nics(nics: &[(&str, &str)]) -> HostSnapshot {
    let mut s = veth();
    let template = s
        .interfaces
        .iter()
        .find(|i| i.name != "lo")
        .unwrap()
        .clone();
    s.interfaces.retain(|i| i.name == "lo");
    for (name, json) in nics {
        let mut i = template.clone();
        i.name = (*name).to_string();
        i.ethtool = serde_json::from_str(json).unwrap();
        s.interfaces.push(i);
    }
    s
}

/// The live capture of this project's KVM guest: virtio_net eth0 with
/// 256-descriptor rings (its maximum), ifb0 and ifb1 without rings.
fn kvm() -> HostSnapshot {
    with_nics(&[
        (
            "eth0",
            include_str!("../../../../tests/fixtures/kvm-2vcpu-6.18/ethtool/eth0.json"),
        ),
        (
            "ifb0",
            include_str!("../../../../tests/fixtures/kvm-2vcpu-6.18/ethtool/ifb0.json"),
        ),
        (
            "ifb1",
            include_str!("../../../../tests/fixtures/kvm-2vcpu-6.18/ethtool/ifb1.json"),
        ),
    ])
}

fn ring_changes(p: &CellPlan) -> Vec<(String, String, Option<String>, String)> {
    p.plan
        .changes
        .iter()
        .map(|c| match &c.target {
            Target::Ethtool { iface, group, attr } => {
                assert_eq!(*group, EthtoolGroup::Rings);
                (
                    iface.clone(),
                    attr.clone(),
                    c.before.clone(),
                    c.after.clone(),
                )
            }
            t => panic!("not a ring change: {t:?}"),
        })
        .collect()
}

#[test]
fn ring_levels_set_ethtool_g_on_the_nics_that_report_rings() {
    // ixgbevf of the c4.8xlarge fixture: rings 1024 of 4096.
    let c4 = with_nics(&[(
        "eth0",
        include_str!("../../../../tests/fixtures/c4-8xlarge/ethtool/eth0.json"),
    )]);
    let p = cell_plan(
        &c4,
        NetnsScope::Init,
        &[
            (Knob::RxRing, Level::Int(4096)),
            (Knob::TxRing, Level::Int(512)),
        ],
    )
    .unwrap();
    assert_eq!(
        ring_changes(&p),
        [
            (
                "eth0".into(),
                "rx".into(),
                Some("1024".into()),
                "4096".into()
            ),
            (
                "eth0".into(),
                "tx".into(),
                Some("1024".into()),
                "512".into()
            ),
        ]
    );
    assert_eq!(p.plan.changes[0].reason, "experiment level rx_ring=4096");
    // The KVM guest: eth0 takes the level, the ifbs (no rings) are skipped.
    let p = cell_plan(&kvm(), NetnsScope::Init, &[(Knob::RxRing, Level::Int(128))]).unwrap();
    assert_eq!(
        ring_changes(&p),
        [("eth0".into(), "rx".into(), Some("256".into()), "128".into())]
    );
}

#[test]
fn a_ring_level_above_the_nics_maximum_is_not_applicable_naming_both() {
    let e = cell_plan(&kvm(), NetnsScope::Init, &[(Knob::RxRing, Level::Int(512))]).unwrap_err();
    assert_eq!(e.knob, "rx_ring");
    assert_eq!(e.level, "512");
    assert_eq!(e.reason, "eth0 has at most 256 rx ring descriptors");
    let e = cell_plan(
        &kvm(),
        NetnsScope::Init,
        &[(Knob::TxRing, Level::Int(4096))],
    )
    .unwrap_err();
    assert_eq!(e.reason, "eth0 has at most 256 tx ring descriptors");
}

#[test]
fn rings_a_driver_does_not_report_make_the_level_not_applicable_with_its_reason() {
    // veth reports no rings (EOPNOTSUPP, as captured).
    let e = plan(&[(Knob::RxRing, Level::Int(256))]).unwrap_err();
    assert!(e.reason.contains("veth0: rings unsupported"), "{e}");
    assert!(e.reason.contains("EOPNOTSUPP"), "{e}");
    // Only the KVM guest's ifbs: each named with its reason.
    let mut s = kvm();
    s.interfaces.retain(|i| i.name != "eth0");
    let e = cell_plan(&s, NetnsScope::Init, &[(Knob::TxRing, Level::Int(64))]).unwrap_err();
    assert!(e.reason.starts_with("ifb0: rings unsupported"), "{e}");
    assert!(e.reason.contains("; ifb1: rings unsupported"), "{e}");
    // A probe that was not read says so.
    s.interfaces[1].ethtool.rings = model::snapshot::Probe::Absent;
    s.interfaces.truncate(2);
    let e = cell_plan(&s, NetnsScope::Init, &[(Knob::TxRing, Level::Int(64))]).unwrap_err();
    assert_eq!(e.reason, "ifb0: rings not read");
}

fn itr(value: &str, reload: bool) -> Level {
    Level::ModuleParam(model::experiment::ModuleParamLevel {
        module: "e1000e".into(),
        param: "InterruptThrottleRate".into(),
        value: value.into(),
        reload,
    })
}

/// With `reload = true` a module parameter level is a snippet change whose
/// plan reloads the module; without it, or on a host where no interface is
/// driven by the module, the cell is n/a and says why.
#[test]
fn module_param_levels_need_the_reload_and_the_driver() {
    let e = plan(&[(Knob::ModuleParam, itr("3", false))]).unwrap_err();
    assert_eq!(e.knob, "module_param");
    assert_eq!(e.level, "e1000e.InterruptThrottleRate=3");
    assert!(e.reason.contains("reload = true"), "{e}");
    let e = plan(&[(Knob::ModuleParam, itr("3", true))]).unwrap_err();
    assert!(
        e.reason.contains("no interface here is driven by e1000e"),
        "{e}"
    );

    let mut snap = veth();
    let name = snap
        .interfaces
        .iter()
        .find(|i| i.name != "lo")
        .unwrap()
        .name
        .clone();
    for i in snap.interfaces.iter_mut().filter(|i| i.name == name) {
        i.driver = Some("e1000e".into());
    }
    let p = cell_plan(
        &snap,
        NetnsScope::Init,
        &[
            (Knob::ModuleParam, itr("0", true)),
            (Knob::TcpTwReuse, Level::Int(1)),
        ],
    )
    .unwrap();
    assert!(p.plan.options.reload_modules);
    let c = p
        .plan
        .changes
        .iter()
        .find(|c| matches!(c.target, Target::ModuleParam { .. }))
        .unwrap();
    assert_eq!(
        c.target,
        Target::ModuleParam {
            module: "e1000e".into(),
            param: "InterruptThrottleRate".into()
        }
    );
    assert_eq!(c.after, "0");
    assert_eq!(c.phase, Phase::Modules);
    assert!(c.reason.contains(&name), "{}", c.reason);
    // A cell without a module parameter does not reload anything.
    let p = plan(&[(Knob::TcpTwReuse, Level::Int(1))]).unwrap();
    assert!(!p.plan.options.reload_modules);
}
