//! Snapshot rules on fixture roots (the c4.8xlarge and two-socket shapes
//! among them), each fired by the fixture's own layout or by an edit of it,
//! and quiet once the edit removes the cause.

#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use model::parse::sockstat::parse_sockstat;
use model::plan::Bdp;
use model::CpuSet;
use nettune_doctor::{DoctorId, Input, Severity};

fn set_affinity(i: &mut Input, irq: u32, cpus: &str) {
    let c = CpuSet::parse_list(cpus).unwrap();
    let q = i
        .snapshot
        .irqs
        .iter_mut()
        .find(|q| q.number.0 == irq)
        .unwrap();
    q.smp_affinity = Some(c.clone());
    q.effective_affinity = Some(c);
}

#[test]
fn rps_off_on_c4_8xlarge_and_not_once_rps_is_on() {
    let mut i = input("c4-8xlarge");
    let r = report(&i);
    let f = r.of(DoctorId::RpsOff).next().expect("fires");
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.subject, "eth0");
    // The seed's masks: node 0's and node 1's other physical cores.
    let masks: Vec<&str> = f
        .fix
        .changes
        .iter()
        .filter(|c| c.knob == "rps_cpus")
        .map(|c| c.after.as_str())
        .collect();
    assert_eq!(masks.len(), 2, "{:?}", f.fix.changes);
    for q in &mut i.snapshot.interfaces[0].rx_queues {
        q.rps_cpus = Some(CpuSet::parse_list("1-8").unwrap());
    }
    let name = i.snapshot.interfaces[0].name.clone();
    assert_eq!(name, "eth0");
    assert!(!report(&i).has(DoctorId::RpsOff));
}

#[test]
fn rps_off_is_not_advised_under_a_profile_that_avoids_rps() {
    // The latency profile turns the rps rule off (an extra hop per packet):
    // doctor with that profile does not tell the user to turn RPS on, and
    // says why it stays silent.
    let mut i = input("c4-8xlarge");
    i.profile = Some(tune::profile::builtin("latency").unwrap());
    let r = report(&i);
    assert!(!r.has(DoctorId::RpsOff), "{:?}", r.findings);
    let why = r.skipped(DoctorId::RpsOff).expect("says why");
    assert!(why.contains("latency profile avoids rps"), "{why}");
    // balanced and throughput keep it.
    for p in ["balanced", "throughput"] {
        i.profile = Some(tune::profile::builtin(p).unwrap());
        assert!(report(&i).has(DoctorId::RpsOff), "{p}");
    }
}

#[test]
fn rps_off_does_not_fire_with_a_queue_per_core() {
    // ENA: 4 queues for 4 physical cores (8 SMT threads).
    assert!(!report(&input("nic-ena")).has(DoctorId::RpsOff));
}

#[test]
fn irq_remote_node_on_the_two_node_sfc_and_not_when_local() {
    let mut i = input("nic-sfc-2node");
    let r = report(&i);
    let f = r.of(DoctorId::IrqRemoteNode).next().expect("fires");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.evidence.iter().filter(|e| e.what == "queue IRQ").count(),
        4
    );
    assert!(f.fix.changes.iter().all(|c| c.rule == "irq-affinity"));
    for (irq, cpu) in [(60, "1"), (61, "3"), (62, "5"), (63, "7")] {
        set_affinity(&mut i, irq, cpu);
    }
    let r = report(&i);
    assert!(!r.has(DoctorId::IrqRemoteNode));
    assert!(!r.has(DoctorId::IrqStacked));
}

#[test]
fn irq_remote_node_is_info_for_a_deliberate_spill() {
    // two-socket-16q: 16 queues, the NIC's node has fewer cores; the
    // throughput plan puts the rest on node 0.
    let mut i = input("two-socket-16q");
    let plan = nettune_doctor::Cx::new(&i).plan.unwrap();
    for c in plan.changes.iter().filter(|c| c.rule == "irq-affinity") {
        if let model::plan::Target::IrqAffinity { irq, .. } = c.target {
            set_affinity(&mut i, irq, &c.after);
        }
    }
    let r = report(&i);
    assert!(r
        .of(DoctorId::IrqRemoteNode)
        .all(|f| f.severity == Severity::Info));
}

#[test]
fn irq_stacked_on_ena_and_not_when_spread() {
    let mut i = input("nic-ena");
    let r = report(&i);
    let f = r.of(DoctorId::IrqStacked).next().expect("fires");
    assert!(f.evidence[0]
        .value
        .contains("all 4 queue IRQs are affine to CPU 0"));
    // Two of four on one CPU: still stacked (4 queues, 4 cores).
    for (irq, cpu) in [(27, "0"), (28, "0"), (29, "2"), (30, "3")] {
        set_affinity(&mut i, irq, cpu);
    }
    let r = report(&i);
    let f = r
        .of(DoctorId::IrqStacked)
        .next()
        .expect("partial stacking fires");
    assert!(
        f.evidence[0].value.contains("IRQs 27, 28"),
        "{:?}",
        f.evidence
    );
    set_affinity(&mut i, 28, "1");
    assert!(!report(&i).has(DoctorId::IrqStacked));
}

#[test]
fn irq_owner_conflict_irqbalance_over_an_applied_plan() {
    let mut i = input("tuner-two-socket-32c");
    assert!(i.snapshot.owners.irqbalance.is_some());
    let r = report(&i);
    let f = r.of(DoctorId::IrqOwnerConflict).next().expect("fires");
    assert_eq!(f.severity, Severity::Info, "only planned so far");
    let plan = nettune_doctor::Cx::new(&i).plan.unwrap();
    i.applied = Some(plan);
    let r = report(&i);
    let f = r.of(DoctorId::IrqOwnerConflict).next().unwrap();
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.fix.changes.iter().any(|c| c.rule == "irqbalance"),
        "{:?}",
        f.fix
    );
    // No irqbalance: nothing to conflict with.
    i.snapshot.owners.irqbalance = None;
    assert!(!report(&i).has(DoctorId::IrqOwnerConflict));
    assert!(!report(&input("c4-8xlarge")).has(DoctorId::IrqOwnerConflict));
}

fn tw(i: &mut Input, tw: u64, reuse: &str, range: &str) {
    i.sockstat = Some(
        parse_sockstat(&format!(
            "sockets: used 9\nTCP: inuse 3 orphan 0 tw {tw} alloc 5 mem 2\nUDP: inuse 0 mem 0\n"
        ))
        .unwrap(),
    );
    i.snapshot
        .sysctls
        .insert("net.ipv4.tcp_tw_reuse".into(), reuse.into());
    i.snapshot
        .sysctls
        .insert("net.ipv4.ip_local_port_range".into(), range.into());
}

#[test]
fn timewait_exhaustion_fires_with_reuse_off_and_clears_with_its_fix() {
    let mut i = input("kvm-2vcpu-6.18");
    assert!(report(&i)
        .skipped(DoctorId::TimewaitExhaustion)
        .unwrap()
        .contains("/proc/net/sockstat"));
    // The fixture's own range and default reuse (2 = loopback only).
    tw(&mut i, 27_000, "2", "32768\t60999");
    let r = report(&i);
    let f = r.of(DoctorId::TimewaitExhaustion).next().expect("fires");
    assert_eq!(f.severity, Severity::Critical, "{}", f.title);
    assert!(f
        .title
        .contains("27000 TIME_WAIT sockets against 28232 ephemeral ports"));
    assert!(f.fix.app.as_deref().unwrap().contains("tcp_tw_reuse=1"));
    // The fix is also two journaled plan changes, so `nettune lab` applies it.
    let files: Vec<(String, String, Option<String>)> = f
        .fix
        .changes
        .iter()
        .map(|c| match &c.target {
            model::plan::Target::File { path, .. } => {
                (path.clone(), c.after.clone(), c.before.clone())
            }
            t => panic!("{t:?}"),
        })
        .collect();
    assert_eq!(
        files,
        [
            (
                "/proc/sys/net/ipv4/tcp_tw_reuse".to_string(),
                "1".to_string(),
                Some("2".to_string())
            ),
            (
                "/proc/sys/net/ipv4/ip_local_port_range".to_string(),
                "1024\t65535".to_string(),
                Some("32768\t60999".to_string())
            ),
        ]
    );
    tw(&mut i, 12_000, "0", "32768\t60999");
    assert_eq!(r.exit_code(), 2);
    assert_eq!(
        report(&i)
            .of(DoctorId::TimewaitExhaustion)
            .next()
            .unwrap()
            .severity,
        Severity::Warning
    );
    tw(&mut i, 27_000, "1", "32768\t60999");
    assert!(!report(&i).has(DoctorId::TimewaitExhaustion), "reuse on");
    tw(&mut i, 20_000, "0", "1024 65535");
    assert!(!report(&i).has(DoctorId::TimewaitExhaustion), "wide range");
    tw(&mut i, 10_000, "0", "32768\t60999");
    assert!(!report(&i).has(DoctorId::TimewaitExhaustion), "35 %");
    tw(&mut i, 27_000, "0", "zz");
    assert!(report(&i)
        .skipped(DoctorId::TimewaitExhaustion)
        .unwrap()
        .contains("`zz`"));
}

#[test]
fn buffers_below_bdp_with_the_seed_path_and_not_for_a_short_one() {
    let mut i = input("c4-8xlarge");
    assert!(report(&i)
        .skipped(DoctorId::BuffersBelowBdp)
        .unwrap()
        .starts_with("no --bdp RATE,RTT given"));
    // Seed 004: 100 Mbit/s at 100 ms.
    i.bdp = Some(Bdp::parse("100mbit,100ms").unwrap());
    let r = report(&i);
    let f = r.of(DoctorId::BuffersBelowBdp).next().expect("fires");
    assert!(f.title.contains("1250000 bytes"), "{}", f.title);
    // Kernel 4.4's tcp_rmem max (6 MiB) is enough; rmem_max/wmem_max are not.
    assert!(
        f.evidence.iter().any(|e| e.what == "net.core.rmem_max"),
        "{:?}",
        f.evidence
    );
    assert!(!f
        .evidence
        .iter()
        .any(|e| e.what.starts_with("net.ipv4.tcp_rmem")));
    assert!(
        f.fix.changes.iter().any(|c| c.knob == "net.core.rmem_max"),
        "{:?}",
        f.fix
    );
    assert!(f
        .fix
        .command
        .as_deref()
        .unwrap()
        .contains("--bdp 100mbit,100ms"));
    i.bdp = Some(Bdp::parse("10mbit,1ms").unwrap());
    assert!(!report(&i).has(DoctorId::BuffersBelowBdp));
}

#[test]
fn coalesce_mismatch_under_a_latency_goal_only() {
    let mut i = input("two-socket-16q");
    assert!(!report(&i).has(DoctorId::CoalesceMismatch), "no intent");
    i.profile = Some(tune::profile::builtin("throughput").unwrap());
    assert!(!report(&i).has(DoctorId::CoalesceMismatch), "throughput");
    i.profile = Some(tune::profile::builtin("latency").unwrap());
    let r = report(&i);
    let f = r.of(DoctorId::CoalesceMismatch).next().expect("fires");
    assert!(f.title.contains("adaptive-rx on"), "{}", f.title);
    assert!(f.fix.changes.iter().any(|c| c.rule == "coalesce"));
    // c4.8xlarge's ixgbevf: rx-usecs 1 is dynamic ITR (the yuuk.io study).
    let mut c4 = input("c4-8xlarge");
    c4.profile = Some(tune::profile::builtin("latency").unwrap());
    let r = report(&c4);
    assert!(r
        .of(DoctorId::CoalesceMismatch)
        .next()
        .unwrap()
        .title
        .contains("dynamic ITR"));
}

#[test]
fn coalesce_mismatch_no_moderation_at_a_high_packet_rate() {
    // kvm-2vcpu's virtio eth0 reports rx-usecs 0.
    let mut i = input("kvm-2vcpu-6.18");
    let traffic = |pps: u64| {
        move |c: &mut Counters| {
            c.tick(
                0,
                Ticks {
                    idle: 100,
                    ..Ticks::default()
                },
            );
            c.tick(
                1,
                Ticks {
                    idle: 100,
                    ..Ticks::default()
                },
            );
            let p = c.netdev.first().map_or(0, |x| x.1);
            c.netdev = vec![("eth0".into(), p + pps, 0)];
        }
    };
    i.samples = run(2, 2, traffic(5_000));
    assert!(!report(&i).has(DoctorId::CoalesceMismatch));
    i.samples = run(2, 2, traffic(300_000));
    let r = report(&i);
    let f = r.of(DoctorId::CoalesceMismatch).next().expect("fires");
    assert!(
        f.title
            .contains("rx-usecs 0 (an interrupt per packet) at 300000"),
        "{}",
        f.title
    );
    // This virtio device has no notification coalescing (rx-usecs 0,
    // rx-frames 1): virtio_net refuses any other rx-usecs, so no ethtool
    // command is offered, only why.
    assert!(f.fix.changes.is_empty(), "{:?}", f.fix);
    assert!(!f.fix.text.contains("ethtool -C eth0"), "{}", f.fix.text);
    assert!(
        f.fix.text.contains("virtio_net refuses rx-usecs"),
        "{}",
        f.fix.text
    );
}

/// Issue 17: counts since boot predate the change; the current affinity is
/// what irq-stacked judges.
#[test]
fn irq_stacked_judges_the_current_affinity_not_since_boot_counts() {
    // Every interrupt of enp2s0's 8 queue IRQs so far landed on CPU 0.
    let mut i = input("two-socket-multi-nic");
    assert!(report(&i)
        .of(DoctorId::IrqStacked)
        .any(|f| f.subject == "enp2s0"));
    for (k, irq) in (61..=68).enumerate() {
        set_affinity(&mut i, irq, &k.to_string());
    }
    let r = report(&i);
    assert!(
        !r.of(DoctorId::IrqStacked).any(|f| f.subject == "enp2s0"),
        "{:?}",
        r.of(DoctorId::IrqStacked).collect::<Vec<_>>()
    );
}

/// Issue 17: enp65s0 has 12 queues for node 1's 8 cores: stacked locally
/// is unavoidable, so info, with the reason.
#[test]
fn unavoidable_local_stacking_is_info() {
    let mut i = input("two-socket-multi-nic");
    for (k, irq) in (71..=82).enumerate() {
        set_affinity(&mut i, irq, &(8 + k % 8).to_string());
    }
    let r = report(&i);
    let f = r
        .of(DoctorId::IrqStacked)
        .find(|f| f.subject == "enp65s0")
        .expect("stacked");
    assert_eq!(f.severity, Severity::Info);
    assert!(f
        .evidence
        .iter()
        .any(|e| e.what == "unavoidable" && e.value.contains("ethtool -L enp65s0 combined 8")));
    assert!(!r
        .of(DoctorId::IrqRemoteNode)
        .any(|f| f.subject == "enp65s0"));
}

/// Issue 17: a kernel without effective_affinity: a mask spanning both
/// nodes whose interrupts all landed locally is not a warning, and the
/// evidence names the mask, not effective_affinity.
#[test]
fn irq_remote_node_on_a_mask_only_kernel_cites_the_mask() {
    let mut i = input("two-socket-multi-nic");
    for q in i.snapshot.irqs.iter_mut() {
        q.effective_affinity = None;
    }
    let r = report(&i);
    let f = r
        .of(DoctorId::IrqRemoteNode)
        .find(|f| f.subject == "enp2s0")
        .expect("the mask allows node 1");
    assert_eq!(f.severity, Severity::Info, "{f:?}");
    let q: Vec<_> = f
        .evidence
        .iter()
        .filter(|e| e.what == "queue IRQ")
        .collect();
    assert_eq!(q.len(), 8);
    assert!(q
        .iter()
        .all(|e| e.source == "/proc/irq/N/smp_affinity_list"));
}

/// Issue 17: with samples, a mask-only IRQ (no effective_affinity) is judged
/// by where the window's interrupts landed.
#[test]
fn irq_remote_node_with_samples_judges_where_the_window_landed() {
    let mut i = input("two-socket-multi-nic");
    for q in i.snapshot.irqs.iter_mut() {
        q.effective_affinity = None;
    }
    let window = |cpu: usize| {
        let mut a = Counters::cpus(32);
        let mut b = Counters::cpus(32);
        for (k, irq) in (61..=68).enumerate() {
            a.interrupts
                .push((irq, format!("enp2s0-TxRx-{k}"), vec![0; 32]));
            let mut per = vec![0; 32];
            per[cpu] = 500;
            b.interrupts.push((irq, format!("enp2s0-TxRx-{k}"), per));
        }
        samples(&[a, b])
    };
    // All of the window's interrupts on CPU 1 (node 0, enp2s0's): local.
    i.samples = window(1);
    assert!(!report(&i)
        .of(DoctorId::IrqRemoteNode)
        .any(|f| f.subject == "enp2s0"));
    // On CPU 9 (node 1): remote, a warning.
    i.samples = window(9);
    let r = report(&i);
    let f = r
        .of(DoctorId::IrqRemoteNode)
        .find(|f| f.subject == "enp2s0")
        .expect("remote");
    assert_eq!(f.severity, Severity::Warning);
}

/// The Red Hat slides' study measured 58 % of the link with buffers at 1 × BDP: half of a
/// buffer is window under the kernels' default share, and the target is a
/// window of 1.33 × BDP, so 1 × BDP fires, the
/// caps count that share, and `rmem_max` is named as the limit of
/// `SO_RCVBUF` only (autotuned flows grow to `tcp_rmem[2]`).
#[test]
fn buffers_below_bdp_fires_at_one_bdp_with_the_default_share() {
    let mut i = input("c4-8xlarge");
    i.bdp = Some(Bdp::parse("100mbit,100ms").unwrap());
    let set = |i: &mut Input, n: u64| {
        let s = &mut i.snapshot.sysctls;
        s.insert("net.ipv4.tcp_rmem".into(), format!("4096 87380 {n}"));
        s.insert("net.ipv4.tcp_wmem".into(), format!("4096 16384 {n}"));
        s.insert("net.core.rmem_max".into(), n.to_string());
        s.insert("net.core.wmem_max".into(), n.to_string());
        s.insert("net.ipv4.tcp_adv_win_scale".into(), "1".into());
    };
    set(&mut i, 1_250_000);
    let r = report(&i);
    let f = r
        .of(DoctorId::BuffersBelowBdp)
        .next()
        .expect("fires at 1 x BDP");
    let ev = |what: &str| {
        f.evidence
            .iter()
            .find(|e| e.what.starts_with(what))
            .unwrap_or_else(|| panic!("no {what} in {:?}", f.evidence))
            .value
            .clone()
    };
    // Autotuned: half of 1.25 MB per 100 ms = 50 Mbit/s.
    let rmem = ev("net.ipv4.tcp_rmem");
    assert!(rmem.contains("autotuned flow near 50.0 Mbit/s"), "{rmem}");
    // SO_RCVBUF: doubled, so 2 × 1.25 MB × 1/2 per 100 ms.
    let max = ev("net.core.rmem_max");
    assert!(max.contains("SO_RCVBUF near 100.0 Mbit/s"), "{max}");
    assert!(
        f.evidence
            .iter()
            .any(|e| e.value.contains("50.0 %")
                && e.value.contains("net.ipv4.tcp_adv_win_scale = 1")),
        "{:?}",
        f.evidence
    );
    // 1.33 × BDP / share = 3325000 bytes: quiet.
    set(&mut i, 3_325_000);
    assert!(!report(&i).has(DoctorId::BuffersBelowBdp));
    // A share of 3/4 (tcp_adv_win_scale 2 on an older kernel) needs less.
    set(&mut i, 2_300_000);
    assert!(report(&i).has(DoctorId::BuffersBelowBdp));
    i.snapshot
        .sysctls
        .insert("net.ipv4.tcp_adv_win_scale".into(), "2".into());
    assert!(!report(&i).has(DoctorId::BuffersBelowBdp));
}

/// Issue 17 item 6: irqbalance running is no conflict when its environment
/// file bans every IRQ the applied plan places; it is while one is not banned.
#[test]
fn irq_owner_conflict_is_silent_when_irqbalance_bans_the_pinned_irqs() {
    use model::plan::Target;
    use model::snapshot::EnvFile;
    let mut i = input("tuner-two-socket-32c");
    let plan = nettune_doctor::Cx::new(&i).plan.unwrap();
    let pinned: Vec<u32> = plan
        .changes
        .iter()
        .filter_map(|c| match c.target {
            Target::IrqAffinity { irq, .. } => Some(irq),
            _ => None,
        })
        .collect();
    assert!(!pinned.is_empty());
    i.applied = Some(plan);
    let args: Vec<String> = pinned.iter().map(|n| format!("--banirq={n}")).collect();
    i.snapshot.owners.irqbalance_env = Some(EnvFile {
        path: "/etc/default/irqbalance".into(),
        content: format!("IRQBALANCE_ARGS=\"{}\"\n", args.join(" ")),
    });
    assert!(!report(&i).has(DoctorId::IrqOwnerConflict));
    // One pinned IRQ not banned: the conflict is back.
    i.snapshot.owners.irqbalance_env = Some(EnvFile {
        path: "/etc/default/irqbalance".into(),
        content: format!("IRQBALANCE_ARGS=\"{}\"\n", args[1..].join(" ")),
    });
    let r = report(&i);
    let f = r.of(DoctorId::IrqOwnerConflict).next().expect("fires");
    assert_eq!(f.severity, Severity::Warning);
}

/// One rule, two looks: on the two-socket fixture, `irq-remote-node` is a
/// finding of the snapshot alone (one per remote queue IRQ, what `inspect`
/// shows) and doctor's (one per NIC, built on the window and the plan), and
/// `irqbalance-running`, a rule of the snapshot alone, reaches doctor only
/// through the rules that read it.
#[test]
fn one_catalogue_gives_inspect_and_doctor_their_findings() {
    let i = input("two-socket-16q");
    let seen = nettune_doctor::snapshot::findings(&i.snapshot);
    let of = |id| seen.iter().filter(|f| f.id == id).count();
    assert!(of(DoctorId::IrqRemoteNode) >= 1, "{seen:?}");
    assert_eq!(of(DoctorId::IrqbalanceRunning), 1);
    let r = report(&i);
    assert_eq!(r.of(DoctorId::IrqRemoteNode).count(), 1);
    assert!(!r.has(DoctorId::IrqbalanceRunning));
    assert!(r.skipped(DoctorId::IrqbalanceRunning).is_none());
}
