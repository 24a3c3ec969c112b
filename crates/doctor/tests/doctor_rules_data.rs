//! The rules fed by `host::doctor_facts`: each fires on a fixture root built
//! from a copy of `tests/fixtures/*` (the c4.8xlarge and two-socket shapes
//! among them) with the overlays of `tests/fixtures/doctor/make-doctor.py`,
//! and stays quiet on one that is fine; a rule lacking its file is skipped
//! with the file named.

#![allow(clippy::unwrap_used)]

use host::Root;
use nettune_doctor::{diagnose, DoctorId, Input, Report, Severity};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A temp copy of fixture `base`, with overlay `doctor/<overlay>` over it.
struct Fx {
    _t: tempfile::TempDir,
    root: PathBuf,
}

impl Fx {
    fn new(base: &str, overlay: Option<&str>) -> Fx {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let cp = |src: std::ffi::OsString| {
            assert!(Command::new("cp")
                .arg("-a")
                .arg(src)
                .arg(&root)
                .status()
                .unwrap()
                .success());
        };
        cp(fixtures().join(base).into_os_string());
        if let Some(o) = overlay {
            let mut src = fixtures().join("doctor").join(o).into_os_string();
            src.push("/.");
            cp(src);
        }
        Fx { _t: t, root }
    }

    fn c4_busy() -> Fx {
        Fx::new("c4-8xlarge", Some("c4-8xlarge-busy"))
    }

    fn tuned() -> Fx {
        Fx::new("two-socket-16q", Some("two-socket-16q-tuned"))
    }

    fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    /// Edit `ethtool/<iface>.json` as JSON.
    fn ethtool(&self, iface: &str, f: impl FnOnce(&mut serde_json::Value)) -> &Self {
        let p = self.root.join(format!("ethtool/{iface}.json"));
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        self
    }

    fn input(&self) -> Input {
        input_of(&self.root)
    }
}

fn input_of(dir: &Path) -> Input {
    let root = Root::new(dir);
    let snap = host::read_snapshot(&root);
    let mut i = Input::new(snap);
    i.extras = host::extras::read_extras(&root, &i.snapshot);
    i.sockstat = host::sockstat::read_sockstat(&root).ok().flatten();
    i.facts = host::doctor_facts::read_doctor_facts(&root, &i.snapshot);
    i
}

fn with_profile(mut i: Input, p: &str) -> Input {
    i.profile = Some(tune::profile::builtin(p).unwrap());
    i
}

/// The findings of `id`, after checking each has evidence with sources and a fix.
fn found(r: &Report, id: DoctorId) -> Vec<nettune_doctor::Finding> {
    let v: Vec<_> = r.of(id).cloned().collect();
    for f in &v {
        assert!(!f.evidence.is_empty(), "{id}: no evidence");
        assert!(
            f.evidence.iter().all(|e| !e.source.is_empty()),
            "{id}: evidence without source"
        );
        assert!(!f.fix.text.is_empty(), "{id}: no fix");
        assert!(!f.source.is_empty());
    }
    v
}

const MINE: &[DoctorId] = &[
    DoctorId::NicDrops,
    DoctorId::RingSmall,
    DoctorId::CloudAllowance,
    DoctorId::CpuPower,
    DoctorId::EnhancedNetworkingOff,
    DoctorId::AppOnIrqCpu,
    DoctorId::OffloadOff,
    DoctorId::Bufferbloat,
    DoctorId::BootOverride,
    DoctorId::ConntrackFull,
    DoctorId::TcpMemoryPressure,
];

#[test]
fn well_tuned_two_socket_host_fires_none_of_these_rules() {
    let fx = Fx::tuned();
    for profile in [None, Some("latency"), Some("throughput")] {
        let mut i = fx.input();
        if let Some(p) = profile {
            i = with_profile(i, p);
        }
        let r = diagnose(&i);
        for id in MINE {
            assert!(
                !r.has(*id),
                "{id} fired with profile {profile:?}: {:#?}",
                r.of(*id).collect::<Vec<_>>()
            );
        }
        // They ran: nothing the overlay provides is skipped.
        for id in [
            DoctorId::ConntrackFull,
            DoctorId::TcpMemoryPressure,
            DoctorId::Bufferbloat,
            DoctorId::AppOnIrqCpu,
            DoctorId::OffloadOff,
            DoctorId::EnhancedNetworkingOff,
        ] {
            assert_eq!(r.skipped(id), None, "{id}");
        }
    }
}

#[test]
fn nic_drops_fires_on_missed_packets_and_not_without() {
    let fx = Fx::new("c4-8xlarge", None);
    assert!(!diagnose(&fx.input()).has(DoctorId::NicDrops));
    fx.write(
        "sys/devices/pci0000:00/0000:00:03.0/net/eth0/statistics/rx_missed_errors",
        "5000\n",
    );
    let f = found(&diagnose(&fx.input()), DoctorId::NicDrops);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Info, "since boot only, no window");
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "rx_missed_errors since boot" && e.value == "5000"));
    assert!(f[0].fix.text.contains("ring"));
}

#[test]
fn ring_small_needs_both_a_small_ring_and_drops() {
    let fx = Fx::new("c4-8xlarge", None);
    // c4's ring is 1024 of 4096, but no drops.
    assert!(!diagnose(&fx.input()).has(DoctorId::RingSmall));
    fx.write(
        "sys/devices/pci0000:00/0000:00:03.0/net/eth0/statistics/rx_missed_errors",
        "5000\n",
    );
    let f = found(&diagnose(&fx.input()), DoctorId::RingSmall);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].title.contains("1024 of a possible 4096"),
        "{}",
        f[0].title
    );
    assert!(f[0].fix.text.contains("4096"));
    // At its maximum the ring is not the cause.
    fx.ethtool("eth0", |v| v["rings"]["value"]["rx"] = 4096.into());
    assert!(!diagnose(&fx.input()).has(DoctorId::RingSmall));
}

#[test]
fn cloud_allowance_fires_on_ena_counters_and_not_when_zero() {
    let fx = Fx::new("nic-ena", None);
    // The fixture's ENA counters are all zero: the rule runs and finds nothing.
    let r = diagnose(&fx.input());
    assert!(!r.has(DoctorId::CloudAllowance));
    assert_eq!(r.skipped(DoctorId::CloudAllowance), None);
    // Seed 000's plateau: the packet-rate allowance exceeded.
    fx.ethtool("ens5", |v| {
        v["stats"]["value"]["driver"]["pps_allowance_exceeded"] = 123_456.into()
    });
    let f = found(&diagnose(&fx.input()), DoctorId::CloudAllowance);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Info, "since driver load only");
    assert!(
        f[0].title.contains("packets per second allowance"),
        "{}",
        f[0].title
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "pps_allowance_exceeded since driver load" && e.value == "123456"));
    // Without samples the arithmetic cannot be done, and says so.
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "which limit binds" && e.value.contains("need samples")));
    assert!(f[0].fix.app.is_some());
}

#[test]
fn cpu_power_fires_under_latency_only() {
    let fx = Fx::c4_busy();
    let r = diagnose(&with_profile(fx.input(), "latency"));
    let f = found(&r, DoctorId::CpuPower);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].title.contains("36 CPUs on governor powersave"),
        "{}",
        f[0].title
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "idle state C6-HSW enabled"));
    assert!(
        !f[0].evidence.iter().any(|e| e.what.contains("C1E")),
        "10 µs is not deep"
    );
    assert!(
        !diagnose(&fx.input()).has(DoctorId::CpuPower),
        "no latency goal"
    );
    // A VM without cpufreq or cpuidle: skipped, naming the file.
    let bare = Fx::new("c4-8xlarge", None);
    let r = diagnose(&with_profile(bare.input(), "latency"));
    assert!(r
        .skipped(DoctorId::CpuPower)
        .unwrap()
        .starts_with("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
}

#[test]
fn enhanced_networking_off_fires_on_xen_netfront_not_on_the_sr_iov_vf() {
    let fx = Fx::c4_busy();
    // c4.8xlarge uses an ixgbevf VF: enhanced networking is on.
    let r = diagnose(&fx.input());
    assert!(!r.has(DoctorId::EnhancedNetworkingOff));
    assert_eq!(r.skipped(DoctorId::EnhancedNetworkingOff), None);
    let drv = fx.root.join("sys/devices/pci0000:00/0000:00:03.0/driver");
    std::fs::remove_file(&drv).unwrap();
    std::os::unix::fs::symlink("../../../bus/xen/drivers/vif", &drv).unwrap();
    let f = found(&diagnose(&fx.input()), DoctorId::EnhancedNetworkingOff);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].title.contains("EC2 guest on Xen netfront"),
        "{}",
        f[0].title
    );
    assert!(f[0].fix.text.contains("ENA"));
    assert!(f[0]
        .source
        .contains("\"2 Million Packets Per Second on a Public Cloud Instance\""));
    let bare = Fx::new("c4-8xlarge", None);
    let r = diagnose(&bare.input());
    assert!(r
        .skipped(DoctorId::EnhancedNetworkingOff)
        .unwrap()
        .starts_with("/sys/class/dmi/id/sys_vendor"));
}

#[test]
fn app_on_irq_cpu_fires_for_redis_on_the_interrupt_core_and_clears_when_moved() {
    let fx = Fx::c4_busy();
    let f = found(&diagnose(&fx.input()), DoctorId::AppOnIrqCpu);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].title
            .starts_with("redis-server (pid 2301) is pinned to CPUs 0 that take eth0's interrupts"),
        "{}",
        f[0].title
    );
    assert!(
        f[0].fix
            .app
            .as_deref()
            .unwrap()
            .starts_with("taskset -pc 1-8,10-35 2301"),
        "{:?}",
        f[0].fix.app
    );
    assert_eq!(
        f[0].fix.bench,
        Some(nettune_doctor::BenchFix::new(
            nettune_doctor::Workloads::All,
            &["--cpus", "1-8,10-35"]
        ))
    );
    // The Aerospike article's fix: the application on other cores than the IRQs'.
    fx.write(
        "proc/2301/status",
        "Name:\tredis-server\nCpus_allowed_list:\t1-8\n",
    );
    assert!(!diagnose(&fx.input()).has(DoctorId::AppOnIrqCpu));
    let bare = Fx::new("c4-8xlarge", None);
    assert_eq!(
        diagnose(&bare.input()).skipped(DoctorId::AppOnIrqCpu),
        Some("/proc/net/tcp: not found")
    );
}

#[test]
fn offload_off_fires_when_gro_is_turned_off() {
    let fx = Fx::new("c4-8xlarge", None);
    assert!(!diagnose(&fx.input()).has(DoctorId::OffloadOff));
    fx.ethtool("eth0", |v| {
        v["features"]["value"]["rx-gro"]["active"] = false.into()
    });
    let f = found(&diagnose(&fx.input()), DoctorId::OffloadOff);
    assert_eq!(f.len(), 1);
    assert!(f[0].fix.text.contains("ethtool -K eth0 gro on"));
    // Fixed off (the driver cannot): not a finding.
    fx.ethtool("eth0", |v| {
        v["features"]["value"]["rx-gro"]["fixed"] = true.into()
    });
    assert!(!diagnose(&fx.input()).has(DoctorId::OffloadOff));
}

#[test]
fn bufferbloat_fires_on_a_busy_pfifo_fast_where_fq_codel_exists() {
    let fx = Fx::c4_busy();
    let f = found(&diagnose(&fx.input()), DoctorId::Bufferbloat);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning, "tx-0 holds a backlog");
    assert!(
        f[0].title
            .contains("pfifo_fast on 2 TX queues while fq_codel and fq is available"),
        "{}",
        f[0].title
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.value.starts_with("1229368 B")));
    assert!(f[0].evidence.iter().any(|e| e.what == "BQL of tx-0"));
    assert!(f[0].fix.text.contains("net.core.default_qdisc=fq_codel"));
    // Where neither fq_codel nor fq exists (this machine's 6.18 build), no finding.
    let rel = "lib/modules/4.4.11-23.53.amzn1.x86_64";
    fx.write(
        &format!("{rel}/modules.dep"),
        "kernel/net/sched/sch_htb.ko:\n",
    );
    assert!(!diagnose(&fx.input()).has(DoctorId::Bufferbloat));
    let bare = Fx::new("c4-8xlarge", None);
    assert_eq!(
        diagnose(&bare.input()).skipped(DoctorId::Bufferbloat),
        Some("netlink/qdisc.json: not found")
    );
}

#[test]
fn boot_override_names_each_boot_file_that_fights_the_plan() {
    let fx = Fx::c4_busy();
    let r = diagnose(&fx.input());
    let f = found(&r, DoctorId::BootOverride);
    let by = |knob: &str| {
        f.iter()
            .find(|x| x.subject == knob)
            .unwrap_or_else(|| panic!("{knob}: {f:#?}"))
    };
    let rfs = by("net.core.rps_sock_flow_entries");
    assert!(rfs
        .evidence
        .iter()
        .any(|e| e.source == "/etc/sysctl.d/99-network.conf:5" && e.value == "0"));
    assert_eq!(rfs.fix.changes.len(), 1);
    assert!(rfs
        .fix
        .command
        .as_deref()
        .unwrap()
        .starts_with("nettune plan --profile balanced"));
    assert!(by("rps_cpus")
        .evidence
        .iter()
        .any(|e| e.source == "/etc/udev/rules.d/60-net-rps.rules:1"));
    assert!(by("rx-usecs")
        .evidence
        .iter()
        .any(|e| e.what == "ixgbevf module parameter InterruptThrottleRate"));
    // Without boot files nothing fights the plan.
    let bare = Fx::new("c4-8xlarge", None);
    let r = diagnose(&bare.input());
    assert!(!r.has(DoctorId::BootOverride));
    assert_eq!(r.skipped(DoctorId::BootOverride), None);
}

#[test]
fn conntrack_full_fires_near_the_maximum() {
    let fx = Fx::c4_busy();
    let f = found(&diagnose(&fx.input()), DoctorId::ConntrackFull);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Critical, "65000 of 65536");
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "drop since boot, all CPUs" && e.value == "128"));
    assert!(f[0].fix.text.contains("nf_conntrack_max=131072"));
    fx.write("proc/sys/net/netfilter/nf_conntrack_count", "1000\n");
    let f = found(&diagnose(&fx.input()), DoctorId::ConntrackFull);
    assert_eq!(
        f[0].severity,
        Severity::Info,
        "only the drop counters remain"
    );
    let bare = Fx::new("c4-8xlarge", None);
    assert!(diagnose(&bare.input())
        .skipped(DoctorId::ConntrackFull)
        .unwrap()
        .contains("nf_conntrack is not loaded"));
}

#[test]
fn tcp_memory_pressure_fires_above_pressure_and_near_max_orphans() {
    let fx = Fx::c4_busy();
    let f = found(&diagnose(&fx.input()), DoctorId::TcpMemoryPressure);
    assert_eq!(f.len(), 2, "{f:#?}");
    // Critical first: 60000 orphans are over half of 65536, where the
    // kernel already resets the orphans of idle peers.
    assert!(f[0]
        .title
        .starts_with("60000 orphaned TCP sockets of a maximum 65536"));
    assert_eq!(f[0].severity, Severity::Critical);
    assert!(f[1]
        .title
        .starts_with("TCP memory in memory pressure: 1900000 pages"));
    assert_eq!(f[1].severity, Severity::Warning);
    fx.write(
        "proc/net/sockstat",
        "TCP: inuse 5 orphan 0 tw 0 alloc 5 mem 3000000\n",
    );
    let f = found(&diagnose(&fx.input()), DoctorId::TcpMemoryPressure);
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].severity,
        Severity::Critical,
        "above tcp_mem's high value"
    );
    fx.write(
        "proc/net/sockstat",
        "TCP: inuse 5 orphan 0 tw 0 alloc 5 mem 300\n",
    );
    assert!(!diagnose(&fx.input()).has(DoctorId::TcpMemoryPressure));
}

/// netdata's `tcp_memory` alarm: critical from 90 % of tcp_mem's hard
/// limit, not only at it (c4 overlay: tcp_mem 1409352 1879136 2818704).
#[test]
fn tcp_memory_is_critical_from_90_percent_of_the_hard_limit() {
    let fx = Fx::c4_busy();
    fx.write(
        "proc/net/sockstat",
        "TCP: inuse 5 orphan 0 tw 0 alloc 5 mem 2600000\n",
    );
    let f = found(&diagnose(&fx.input()), DoctorId::TcpMemoryPressure);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Critical, "{}", f[0].title);
    assert!(f[0].title.contains("near the hard limit"), "{}", f[0].title);
    fx.write(
        "proc/net/sockstat",
        "TCP: inuse 5 orphan 0 tw 0 alloc 5 mem 2500000\n",
    );
    let f = found(&diagnose(&fx.input()), DoctorId::TcpMemoryPressure);
    assert_eq!(f[0].severity, Severity::Warning, "below 90 % of the limit");
}

/// Orphans against the limit the kernel applies: `orphans << shift >
/// tcp_max_orphans` with shift up to 2, so a quarter of tcp_max_orphans
/// (65536 here) already gets orphans reset.
#[test]
fn orphans_are_judged_against_the_penalised_limits() {
    let fx = Fx::c4_busy();
    let orphans = |n: u64| {
        fx.write(
            "proc/net/sockstat",
            &format!("TCP: inuse 5 orphan {n} tw 0 alloc 5 mem 300\n"),
        );
        diagnose(&fx.input())
            .of(DoctorId::TcpMemoryPressure)
            .map(|f| f.severity)
            .collect::<Vec<_>>()
    };
    assert_eq!(orphans(16384), vec![], "16384 x 4 = 65536 is not over");
    assert_eq!(orphans(20000), vec![Severity::Warning], "x4 over the limit");
    assert_eq!(
        orphans(33000),
        vec![Severity::Critical],
        "x2 over the limit"
    );
    assert_eq!(orphans(70000), vec![Severity::Critical]);
    let fx2 = Fx::c4_busy();
    fx2.write(
        "proc/net/sockstat",
        "TCP: inuse 5 orphan 20000 tw 0 alloc 5 mem 300\n",
    );
    let f = found(&diagnose(&fx2.input()), DoctorId::TcpMemoryPressure);
    assert!(f[0].title.contains("counted four times"), "{}", f[0].title);
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.value == "65536 / 32768 / 16384"));
}

/// A sample of `/proc/net/dev` and ENA's driver counters for `ens5`.
fn ena_sample(
    secs: u64,
    rx: (u64, u64),
    tx: (u64, u64),
    pps_exceeded: u64,
) -> model::sample::Sample {
    let text = format!(
        "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n  ens5: {} {} 0 0 0 0 0 0 {} {} 0 0 0 0 0 0\n",
        rx.1, rx.0, tx.1, tx.0
    );
    let mut s = model::sample::Sample {
        at: model::Nanos(secs * 1_000_000_000),
        netdev: Some(model::parse::netdev::parse_netdev(&text).unwrap()),
        ..Default::default()
    };
    let mut st = model::parse::ethtool_stats::NicStats::default();
    st.driver
        .insert("pps_allowance_exceeded".into(), pps_exceeded);
    s.nic.insert("ens5".into(), st);
    s
}

/// A sample of eth0 (ixgbevf: no allowance counters) at `secs`.
fn eth0_sample(secs: u64, rx: (u64, u64)) -> model::sample::Sample {
    let text = format!(
        "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n  eth0: {} {} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
        rx.1, rx.0
    );
    model::sample::Sample {
        at: model::Nanos(secs * 1_000_000_000),
        netdev: Some(model::parse::netdev::parse_netdev(&text).unwrap()),
        ..Default::default()
    }
}

#[test]
fn allowance_on_a_nic_without_allowance_counters_is_not_silent() {
    // EC2 C4's ixgbevf reports no allowance counters: with --allowance the
    // rates are set against what the user gave, and without samples doctor
    // says why it cannot.
    let fx = Fx::new("c4-8xlarge", None);
    let mut i = fx.input();
    i.allowance = nettune_doctor::Allowance {
        bandwidth_bps: None,
        pps: Some(400_000),
    };
    let r = diagnose(&i);
    assert!(!r.has(DoctorId::CloudAllowance));
    let why = r.skipped(DoctorId::CloudAllowance).expect("a skip reason");
    assert!(
        why.contains("--allowance") && why.contains("samples"),
        "{why}"
    );
    i.samples = vec![
        eth0_sample(100, (0, 0)),
        eth0_sample(110, (3_900_000, 249_600_000)),
    ];
    let f = found(&diagnose(&i), DoctorId::CloudAllowance);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].subject, "eth0");
    assert_eq!(
        f[0].severity,
        Severity::Warning,
        "97.5 % of the pps allowance"
    );
    assert!(f[0].title.contains("ixgbevf"), "{}", f[0].title);
    let arith = f[0]
        .evidence
        .iter()
        .find(|e| e.what == "received: pps × packet size × 8")
        .unwrap();
    assert!(
        arith.value.contains("97.5 % of the 400000 pps allowance"),
        "{}",
        arith.value
    );
}

#[test]
fn cloud_allowance_shows_which_limit_binds_from_the_window() {
    let fx = Fx::new("nic-ena", None);
    let mut i = fx.input();
    // 10 s of 400K pps of 64-byte packets each way against a 10 Gbit/s and
    // 1M pps allowance, the pps allowance exceeded 5000 times meanwhile.
    i.allowance = nettune_doctor::Allowance {
        bandwidth_bps: Some(10_000_000_000),
        pps: Some(1_000_000),
    };
    i.samples = vec![
        ena_sample(100, (0, 0), (0, 0), 100),
        ena_sample(
            110,
            (4_000_000, 256_000_000),
            (4_000_000, 256_000_000),
            5_100,
        ),
    ];
    let f = found(&diagnose(&i), DoctorId::CloudAllowance);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning, "rising in the window");
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "pps_allowance_exceeded in the window" && e.value == "5000"));
    let arith = f[0]
        .evidence
        .iter()
        .find(|e| e.what == "received: pps × packet size × 8")
        .unwrap();
    assert_eq!(
        arith.value,
        "400000 pps × 64 B × 8 = 204.8 Mbit/s: 2.0 % of the 10000 Mbit/s bandwidth allowance, 40.0 % of the 1000000 pps allowance: the packet-rate allowance binds"
    );
    // 800K pps of 1500-byte packets: 96 % of the bandwidth, 80 % of the pps
    // allowance: the bandwidth allowance binds instead.
    i.samples[1] = ena_sample(110, (8_000_000, 12_000_000_000), (0, 0), 5_100);
    let f = found(&diagnose(&i), DoctorId::CloudAllowance);
    let arith = f[0]
        .evidence
        .iter()
        .find(|e| e.what == "received: pps × packet size × 8")
        .unwrap();
    assert!(
        arith.value.ends_with("the bandwidth allowance binds"),
        "{}",
        arith.value
    );
    // A window in which the counter did not move (and the snapshot's is 0): nothing.
    i.samples[1] = ena_sample(110, (10, 640), (10, 640), 100);
    assert!(!diagnose(&i).has(DoctorId::CloudAllowance));
}

#[test]
fn buffers_below_bdp_from_the_sockets_rtt_and_link_speed() {
    // c4.8xlarge: 10 Gbit/s eth0, a replication socket at 80 ms RTT, kernel
    // 4.4's 6 MiB tcp_rmem/tcp_wmem maxima: BDP = 10^10 × 0.08 / 8 = 100 MB.
    let fx = Fx::c4_busy();
    let r = diagnose(&fx.input());
    let f = found(&r, DoctorId::BuffersBelowBdp);
    assert_eq!(f.len(), 1, "{:?}", r.skipped(DoctorId::BuffersBelowBdp));
    assert!(
        f[0].title
            .contains("10000 Mbit/s × 80.0 ms = 100000000 bytes"),
        "{}",
        f[0].title
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "net.ipv4.tcp_rmem max"
            && e.value == "6291456 bytes, caps an autotuned flow near 314.6 Mbit/s"));
    assert!(f[0].evidence.iter().any(|e| e
        .what
        .starts_with("RTT of 10.0.100.101:6379 → 172.31.5.9:40002")));
    assert_eq!(
        f[0].fix.command.as_deref(),
        Some("nettune plan --profile balanced --bdp 10000mbit,80000us")
    );
    // The command's --bdp parses as the planner takes it.
    assert!(model::plan::Bdp::parse("10000mbit,80000us").is_ok());
    // Only a same-zone socket (250 µs): 312500 bytes, within 6 MiB.
    fx.write(
        "netlink/inet_diag.json",
        r#"[{"local":"10.0.100.101","local_port":6379,"remote":"10.0.100.102","remote_port":40001,"rtt_us":250,"rttvar_us":50,"snd_cwnd":10,"snd_mss":8949,"bytes_acked":912345,"bytes_received":812345,"delivery_rate":null}]"#,
    );
    let r = diagnose(&fx.input());
    assert!(!r.has(DoctorId::BuffersBelowBdp));
    assert_eq!(r.skipped(DoctorId::BuffersBelowBdp), None);
    // Loopback sockets never cross the NIC: nothing to take an RTT from.
    fx.write(
        "netlink/inet_diag.json",
        r#"[{"local":"127.0.0.1","local_port":6379,"remote":"127.0.0.1","remote_port":40001,"rtt_us":80000,"rttvar_us":50,"snd_cwnd":10,"snd_mss":8949,"bytes_acked":null,"bytes_received":null,"delivery_rate":null}]"#,
    );
    assert!(diagnose(&fx.input())
        .skipped(DoctorId::BuffersBelowBdp)
        .unwrap()
        .contains("non-loopback"));
}

#[test]
fn boot_override_prefers_the_applied_plan() {
    let fx = Fx::c4_busy();
    let mut i = fx.input();
    // An applied plan holding one of the recommended plan's changes.
    let rec = diagnose(&i);
    let plan_change = rec
        .of(DoctorId::BootOverride)
        .flat_map(|f| f.fix.changes.iter())
        .find(|c| c.knob == "net.core.rps_sock_flow_entries")
        .cloned()
        .unwrap();
    let mut applied = rec_plan(&i);
    applied.changes = vec![plan_change];
    i.applied = Some(applied);
    let f = found(&diagnose(&i), DoctorId::BootOverride);
    assert_eq!(f.len(), 1, "only the applied plan's one change: {f:#?}");
    assert!(f[0].evidence[0].what.ends_with("in the applied plan"));
}

/// The recommended plan doctor computes for `i` (balanced, no intent).
fn rec_plan(i: &Input) -> model::plan::Plan {
    let p = tune::profile::builtin("balanced").unwrap();
    tune::plan(
        &i.snapshot,
        &i.extras,
        &p,
        &model::plan::PlanOptions::default(),
    )
    .unwrap()
}

/// A sample holding only driver counters of `iface`.
fn nic_sample(secs: u64, iface: &str, counters: &[(&str, u64)]) -> model::sample::Sample {
    let mut s = model::sample::Sample {
        at: model::Nanos(secs * 1_000_000_000),
        ..Default::default()
    };
    let mut st = model::parse::ethtool_stats::NicStats::default();
    for (k, v) in counters {
        st.driver.insert((*k).to_string(), *v);
    }
    s.nic.insert(iface.to_string(), st);
    s
}

#[test]
fn nic_drops_and_ring_small_are_warnings_when_drops_grow_in_the_window() {
    let fx = Fx::new("c4-8xlarge", None);
    let mut i = fx.input();
    i.samples = vec![
        nic_sample(10, "eth0", &[("rx_no_buffer_count", 100)]),
        nic_sample(13, "eth0", &[("rx_no_buffer_count", 3100)]),
    ];
    let r = diagnose(&i);
    let f = found(&r, DoctorId::NicDrops);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(
        f[0].title,
        "eth0: the NIC dropped 3000 received packets in 3 s (1000/s)"
    );
    let ring = found(&r, DoctorId::RingSmall);
    assert_eq!(ring.len(), 1);
    assert_eq!(ring[0].severity, Severity::Warning);
    // A window where the counter stood still: nothing.
    i.samples[1] = nic_sample(13, "eth0", &[("rx_no_buffer_count", 100)]);
    let r = diagnose(&i);
    assert!(!r.has(DoctorId::NicDrops) && !r.has(DoctorId::RingSmall));
}

#[test]
fn cloud_allowance_on_the_recorded_ena_capture_shows_the_arithmetic() {
    // nic-ena-allowance: 3 recorded samples, 400K pps of 64-byte packets on
    // ens5, pps_allowance_exceeded rising (samples-make.py, invented numbers).
    let dir = fixtures().join("nic-ena-allowance");
    let mut i = input_of(&dir);
    i.samples = host::capture::read_samples(&Root::new(&dir)).unwrap();
    assert!(i.samples.len() >= 2);
    let f = found(&diagnose(&i), DoctorId::CloudAllowance);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning);
    let arith = f[0]
        .evidence
        .iter()
        .find(|e| e.what == "received: pps × packet size × 8")
        .unwrap();
    assert!(
        arith
            .value
            .starts_with("400000 pps × 64 B × 8 = 204.8 Mbit/s"),
        "{}",
        arith.value
    );
    // No allowance given: the bandwidth one is the link speed, the pps one
    // is not guessed; the rising counter names the limit.
    assert!(
        arith.value.ends_with(
            "2.0 % of the 10000 Mbit/s bandwidth allowance (the link speed), pps allowance not given (doctor --allowance RATE,PPS): the counter that rises names the limit"
        ),
        "{}",
        arith.value
    );
}

/// The `received` arithmetic line of cloud-allowance for a 10 s window.
fn allowance_line(i: &mut Input, rx: (u64, u64)) -> String {
    i.samples = vec![
        ena_sample(100, (0, 0), (0, 0), 100),
        ena_sample(110, rx, (0, 0), 5_100),
    ];
    let f = found(&diagnose(i), DoctorId::CloudAllowance);
    assert_eq!(f.len(), 1);
    f[0].evidence
        .iter()
        .find(|e| e.what == "received: pps × packet size × 8")
        .map(|e| e.value.clone())
        .unwrap()
}

#[test]
fn cloud_allowance_names_the_binding_limit_from_both_ratios_not_half_the_link() {
    // The 10000 Mbit/s ENA link with a 5 Gbit/s bandwidth allowance and a
    // 400K pps allowance (the operator's figures, nettune_doctor::Allowance).
    let fx = Fx::new("nic-ena", None);
    let mut i = fx.input();
    i.allowance = nettune_doctor::Allowance {
        bandwidth_bps: Some(5_000_000_000),
        pps: Some(400_000),
    };
    // 390K pps of 64-byte packets: 199.7 Mbit/s, 2 % of the link, 4 % of the
    // bandwidth allowance but 97.5 % of the pps allowance: pps binds.
    let v = allowance_line(&mut i, (3_900_000, 249_600_000));
    assert_eq!(
        v,
        "390000 pps × 64 B × 8 = 199.7 Mbit/s: 4.0 % of the 5000 Mbit/s bandwidth allowance, 97.5 % of the 400000 pps allowance: the packet-rate allowance binds"
    );
    // 380K pps of 1500-byte packets: 4560 Mbit/s, 91.2 % of the bandwidth
    // allowance and 95 % of the pps one: the larger ratio binds.
    let v = allowance_line(&mut i, (3_800_000, 5_700_000_000));
    assert!(
        v.ends_with("95.0 % of the 400000 pps allowance: the packet-rate allowance binds"),
        "{v}"
    );
    // 300K pps of 2000-byte (GRO-merged) frames: 4800 Mbit/s = 96 % of the
    // bandwidth allowance, 75 % of pps, 48 % of the link: bandwidth binds,
    // where "under 50 % of link speed" named the packet rate.
    let v = allowance_line(&mut i, (3_000_000, 6_000_000_000));
    assert_eq!(
        v,
        "300000 pps × 2000 B × 8 = 4800.0 Mbit/s: 96.0 % of the 5000 Mbit/s bandwidth allowance, 75.0 % of the 400000 pps allowance: the bandwidth allowance binds"
    );
    // With a 10 Gbit/s allowance and a 700K pps one, 700K pps of 1000-byte
    // packets is 56 % of the link ("near the link" before) yet 100 % of the
    // pps allowance: pps binds.
    i.allowance = nettune_doctor::Allowance {
        bandwidth_bps: Some(10_000_000_000),
        pps: Some(700_000),
    };
    let v = allowance_line(&mut i, (7_000_000, 7_000_000_000));
    assert!(
        v.ends_with("100.0 % of the 700000 pps allowance: the packet-rate allowance binds"),
        "{v}"
    );
    // Without a pps allowance the bandwidth one defaults to the link speed and
    // nothing is guessed about the packet rate.
    i.allowance = nettune_doctor::Allowance::default();
    let v = allowance_line(&mut i, (3_900_000, 249_600_000));
    assert!(
        v.contains("2.0 % of the 10000 Mbit/s bandwidth allowance (the link speed)"),
        "{v}"
    );
    assert!(v.contains("pps allowance not given"), "{v}");
}
