//! Spec checks (no root needed) and labs built in namespaces (root).

use super::*;
use crate::require_root;
use std::time::Duration;

fn netns_list() -> String {
    run_text(Command::new("ip").args(["netns", "list"])).unwrap_or_default()
}

#[test]
fn spec_ranges_are_checked_before_anything_runs() {
    for (spec, field) in [
        (LabSpec::new(1, 1), "hosts"),
        (LabSpec::new(33, 1), "hosts"),
        (LabSpec::new(2, 0), "queues"),
        (LabSpec::new(2, 17), "queues"),
        (
            LabSpec {
                rate: Some(10),
                ..LabSpec::new(2, 1)
            },
            "rate",
        ),
        (
            LabSpec {
                loss: Some(f64::NAN),
                ..LabSpec::new(2, 1)
            },
            "loss",
        ),
        (
            LabSpec {
                prefix: "nt-lab".into(),
                ..LabSpec::new(2, 1)
            },
            "prefix",
        ),
    ] {
        match Lab::build(spec) {
            Err(LabError::Spec { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    assert!(LabSpec::new(8, 16).validate().is_ok());
    assert!(LabSpec::new(MAX_HOSTS, 1).validate().is_ok());
}

#[test]
fn names_parse_to_owner_and_lab() {
    assert_eq!(owner_of("ntlab-123-4-h0", "ntlab"), Some(123));
    assert_eq!(owner_of("ntlabx-123-4-h0", "ntlab"), None);
    assert_eq!(owner_of("ntlab-abc-4", "ntlab"), None);
    assert_eq!(owner_of("other-123-4", "ntlab"), None);
    assert_eq!(lab_of("ntlab-123-4-h7"), "ntlab-123-4");
    assert_eq!(lab_of("ntlab-123-4"), "ntlab-123-4");
    assert!(start_time(std::process::id()).is_some());
}

#[test]
fn three_hosts_two_queues_ping_and_tear_down() {
    if !require_root("lab::topo::three_hosts_two_queues_ping_and_tear_down") {
        return;
    }
    let name;
    {
        let lab = Lab::build(LabSpec::new(3, 2)).unwrap();
        name = lab.name().to_string();
        assert!(marker_path(&name).exists());
        let list = netns_list();
        for i in 0..3 {
            assert!(list.contains(&format!("{name}-h{i}")), "{list}");
        }
        let q = lab.hosts()[0].sh("ls /sys/class/net/v1/queues").unwrap();
        assert!(q.contains("rx-1") && !q.contains("rx-2"), "{q}");
        let q = lab.hosts()[2].sh("ls /sys/class/net/v0/queues").unwrap();
        assert!(q.contains("rx-1") && !q.contains("rx-2"), "{q}");
        for (from, to) in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 1)] {
            let addr = if from == 0 {
                lab.addr(to).unwrap()
            } else if to == 0 {
                lab.links[from - 1].hub.addr
            } else {
                lab.addr(to).unwrap()
            };
            let out = lab.hosts()[from]
                .sh(&format!("ping -c1 -W1 {addr}"))
                .unwrap();
            assert!(out.contains("1 received"), "{from}->{to}: {out}");
        }
    }
    let list = netns_list();
    assert!(!list.contains(&name), "{list}");
    assert!(!marker_path(&name).exists());
}

#[test]
fn largest_lab_builds_and_every_host_answers_the_hub() {
    if !require_root("lab::topo::largest_lab_builds_and_every_host_answers_the_hub") {
        return;
    }
    let lab = Lab::build(LabSpec::new(MAX_HOSTS, 16)).unwrap();
    let last = MAX_HOSTS as usize - 1;
    assert_eq!(lab.links().len(), last);
    let q = lab.hosts()[0]
        .sh(&format!("ls /sys/class/net/v{last}/queues"))
        .unwrap();
    assert!(q.contains("rx-15") && q.contains("tx-15"), "{q}");
    for i in 1..=last {
        let addr = lab.addr(i).unwrap();
        let out = lab.hosts()[0].sh(&format!("ping -c1 -W1 {addr}")).unwrap();
        assert!(out.contains("1 received"), "0->{i}: {out}");
    }
}

#[test]
fn address_plan_and_names_fit_the_largest_lab() {
    let mut seen = std::collections::BTreeSet::new();
    for slot in 0..MAX_HOSTS - 1 {
        let (a, b) = crate::slot_addrs(slot);
        for addr in [a, b] {
            let o = addr.octets();
            assert!(
                o[0] == 198 && (o[1] & 0xfe) == 18,
                "{addr} outside 198.18.0.0/15"
            );
            assert!(seen.insert(addr), "{addr} given twice");
        }
        // Both ends in the same /30, distinct from every other slot's.
        assert_eq!(u32::from(a) >> 2, u32::from(b) >> 2);
    }
    // Interface names (`vI` at the hub) stay within IFNAMSIZ - 1.
    assert!(format!("v{}", MAX_HOSTS - 1).len() <= 15);
    // Namespace names: the longest prefix, a 7-digit pid, a large sequence.
    let ns = format!(
        "{}-{}-{}-h{}",
        "p".repeat(12),
        4_194_304,
        u32::MAX,
        MAX_HOSTS - 1
    );
    assert_eq!(lab_of(&ns), ns.rsplit_once("-h").unwrap().0);
    assert_eq!(owner_of(&ns, &"p".repeat(12)), Some(4_194_304));
}

#[test]
fn twelve_host_lab_reaches_the_last_spoke_and_tears_down() {
    if !require_root("lab::topo::twelve_host_lab_reaches_the_last_spoke_and_tears_down") {
        return;
    }
    let names: Vec<String>;
    {
        let lab = Lab::build(LabSpec::new(12, 1)).unwrap();
        assert_eq!(lab.links().len(), 11);
        names = lab.hosts().iter().map(|h| h.name().to_string()).collect();
        let last = lab.addr(11).unwrap();
        let out = lab.hosts()[0].sh(&format!("ping -c1 -W2 {last}")).unwrap();
        assert!(out.contains("1 received"), "0->11: {out}");
        // Spoke to spoke through the hub's forwarding.
        let out = lab.hosts()[1].sh(&format!("ping -c1 -W2 {last}")).unwrap();
        assert!(out.contains("1 received"), "1->11: {out}");
    }
    let list = netns_list();
    let left: Vec<&String> = names
        .iter()
        .filter(|n| {
            list.lines()
                .any(|l| l.split_whitespace().next() == Some(n.as_str()))
        })
        .collect();
    assert!(left.is_empty(), "{left:?} left in {list}");
}

#[test]
fn rate_installs_tbf_on_both_ends() {
    if !require_root("lab::topo::rate_installs_tbf_on_both_ends") {
        return;
    }
    let lab = Lab::build(LabSpec {
        rate: Some(100_000_000),
        ..LabSpec::new(2, 1)
    })
    .unwrap();
    for (host, dev) in [(0, "v1"), (1, "v0")] {
        let out = run_text(Command::new("tc").args([
            "-n",
            lab.hosts()[host].name(),
            "qdisc",
            "show",
            "dev",
            dev,
        ]))
        .unwrap();
        assert!(out.contains("tbf") && out.contains("rate 100Mbit"), "{out}");
    }
}

#[test]
fn the_mechanism_is_netem_first_then_the_delay_line() {
    let none = || DelayMechanism::None {
        reason: "Unknown qdisc".into(),
    };
    let probed = |m: DelayMechanism| move || m;
    let unprobed = || -> DelayMechanism { panic!("probed although nothing depends on it") };
    let asked = Some("delay 5ms");
    assert!(matches!(
        choose(None, MechanismChoice::Auto, unprobed),
        Ok(DelayMechanism::None { .. })
    ));
    assert_eq!(
        choose(asked, MechanismChoice::Auto, probed(DelayMechanism::Netem)).unwrap(),
        DelayMechanism::Netem
    );
    assert_eq!(
        choose(asked, MechanismChoice::Auto, none).unwrap(),
        DelayMechanism::Userspace
    );
    assert_eq!(
        choose(asked, MechanismChoice::Userspace, unprobed).unwrap(),
        DelayMechanism::Userspace
    );
    match choose(asked, MechanismChoice::Netem, none) {
        Err(LabError::NoDelayMechanism { asked, reason }) => {
            assert_eq!(asked, "delay 5ms");
            assert!(reason.contains("Unknown qdisc"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failed_delay_line_is_no_delay_mechanism_and_other_errors_stay() {
    let tun = LabError::DelayLine {
        what: "open TUN ntdl1x0a".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    match line_failed(Some("loss 1 %"), MechanismChoice::Auto, tun) {
        e @ LabError::NoDelayMechanism { .. } => {
            let text = e.to_string();
            assert!(
                text.contains("loss 1 %") && text.contains("no netem"),
                "{text}"
            );
            assert!(text.contains("open TUN ntdl1x0a"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    let ip = LabError::Command {
        cmd: "ip link".into(),
        status: "1".into(),
        stderr: "x".into(),
    };
    assert!(matches!(
        line_failed(Some("delay 5ms"), MechanismChoice::Auto, ip),
        LabError::Command { .. }
    ));
}

#[test]
fn delay_uses_netem_where_the_kernel_has_it_else_the_delay_line() {
    if !require_root("lab::topo::delay_uses_netem_where_the_kernel_has_it_else_the_delay_line") {
        return;
    }
    let spec = LabSpec {
        prefix: "ntdelay".into(),
        delay: Some(Duration::from_millis(5)),
        ..LabSpec::new(2, 1)
    };
    // Probe the kernel the same way the lab does, in a namespace of ours.
    let probe = Netns::create("ntprobe").unwrap();
    let mech = probe_netem(&probe);
    drop(probe);
    let lab = Lab::build(spec).unwrap();
    let qdisc = run_text(Command::new("tc").args([
        "-n",
        lab.hosts()[0].name(),
        "qdisc",
        "show",
        "dev",
        "v1",
    ]))
    .unwrap();
    match (mech, lab.delay_mechanism()) {
        (DelayMechanism::Netem, DelayMechanism::Netem) => {
            assert!(qdisc.contains("netem"), "{qdisc}");
            assert!(
                qdisc.contains("delay 2.5ms"),
                "half the RTT each way: {qdisc}"
            );
        }
        (DelayMechanism::None { .. }, DelayMechanism::Userspace) => {
            assert!(!qdisc.contains("netem"), "{qdisc}");
            assert_eq!(
                lab.delay_spec().map(|s| s.delay),
                Some(Duration::from_micros(2500))
            );
            assert!(lab.delay_stats(1).is_some() && lab.delay_stats(2).is_none());
        }
        (m, l) => panic!("probe {m:?} but lab uses {l:?}"),
    }
    drop(lab);
    let me = format!("ntdelay-{}-", std::process::id());
    let list = netns_list();
    assert!(!list.contains(&me), "{list}");
}

#[test]
fn stale_labs_are_reaped_and_others_left_alone() {
    if !require_root("lab::topo::stale_labs_are_reaped_and_others_left_alone") {
        return;
    }
    let dead = dead_pid();
    assert!(start_time(dead).is_none(), "pid {dead} reused already");
    let me = std::process::id();
    std::fs::create_dir_all(MARKER_DIR).unwrap();
    let stale = Netns::create_named(format!("ntreap-{dead}-0-h0")).unwrap();
    let stale_marker = marker_path(&format!("ntreap-{dead}-0"));
    std::fs::write(&stale_marker, format!("{dead} 1\n")).unwrap();
    // An orphan marker of a dead owner, with no namespace left.
    let orphan = marker_path(&format!("ntreap-{dead}-9"));
    std::fs::write(&orphan, format!("{dead} 1\n")).unwrap();
    let live = Netns::create_named(format!("ntreap-{me}-1-h0")).unwrap();
    let other = Netns::create_named(format!("ntreapx-{dead}-0-h0")).unwrap();
    let other2 = Netns::create_named(format!("ntother-{dead}-0-h0")).unwrap();
    // A process inside the stale lab, as a killed run would leave.
    let mut sleeper = stale.command("sleep").arg("30").spawn().unwrap();
    let stale_name = stale.name().to_string();
    // `ip netns exec` enters the namespace before it execs sleep: wait
    // until the kernel lists a process there, as a killed run leaves it.
    let entered = std::time::Instant::now() + Duration::from_secs(5);
    while run_text(Command::new("ip").args(["netns", "pids", &stale_name]))
        .map(|p| p.trim().is_empty())
        .unwrap_or(true)
    {
        assert!(
            std::time::Instant::now() < entered,
            "sleep never entered {stale_name}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::mem::forget(stale); // the reaper, not Drop, must remove it

    let reaped = Lab::reap_stale("ntreap").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let exited = loop {
        if sleeper.try_wait().unwrap().is_some() {
            break true;
        }
        if std::time::Instant::now() > deadline {
            let _ = sleeper.kill();
            let _ = sleeper.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let list = netns_list();
    let _ = std::fs::remove_file(&stale_marker);
    let _ = std::fs::remove_file(&orphan);

    assert!(exited, "process in the stale lab survived");
    assert!(!list.contains(&stale_name), "{list}");
    assert!(list.contains(live.name()), "{list}");
    assert!(list.contains(other.name()), "{list}");
    assert!(list.contains(other2.name()), "{list}");
    assert!(!stale_marker.exists() && !orphan.exists());
    let labs: Vec<&str> = reaped.iter().map(|r| r.lab.as_str()).collect();
    let want0 = format!("ntreap-{dead}-0");
    let want9 = format!("ntreap-{dead}-9");
    assert_eq!(labs, vec![want0.as_str(), want9.as_str()], "{reaped:?}");
    assert_eq!(reaped[0].netns, vec![stale_name.clone()]);
    assert_eq!(reaped[0].killed.len(), 1, "{reaped:?}");
    assert_eq!(reaped[0].marker.as_deref(), Some(stale_marker.as_path()));
    assert!(reaped[1].netns.is_empty() && reaped[1].marker.is_some());
}

/// A pid that is dead: a child spawned and reaped.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    child.id()
}

/// A lab of `prefix` as a run killed with pid `dead` leaves it: the
/// namespace of its host 0 and its marker. Returns both.
fn plant_dead_lab(prefix: &str, dead: u32, seq: u32) -> (String, PathBuf) {
    std::fs::create_dir_all(MARKER_DIR).unwrap();
    let ns = Netns::create_named(format!("{prefix}-{dead}-{seq}-h0")).unwrap();
    let name = ns.name().to_string();
    std::mem::forget(ns); // the reaper, not Drop, must remove it
    let marker = marker_path(&format!("{prefix}-{dead}-{seq}"));
    std::fs::write(&marker, format!("{dead} 1\n")).unwrap();
    (name, marker)
}

/// A test or tool that builds its lab without a session (and was killed
/// before, leaving its namespaces) finds them gone on its next build.
#[test]
fn a_build_reaps_the_stale_labs_of_its_prefix() {
    if !require_root("lab::topo::a_build_reaps_the_stale_labs_of_its_prefix") {
        return;
    }
    let (stale_name, marker) = plant_dead_lab("ntreapb", dead_pid(), 0);
    let lab = Lab::build(LabSpec {
        prefix: "ntreapb".into(),
        ..LabSpec::new(2, 1)
    });
    let list = netns_list();
    if list.contains(&stale_name) {
        let _ = Command::new("ip")
            .args(["netns", "del", &stale_name])
            .status();
    }
    let _ = std::fs::remove_file(&marker);
    let lab = lab.unwrap();
    assert!(!list.contains(&stale_name), "{list}");
    assert!(list.contains(&format!("{}-h0", lab.name())), "{list}");
    assert!(!marker.exists());
    assert!(
        lab.reaped().iter().any(|r| r.netns.contains(&stale_name)),
        "{:?}",
        lab.reaped()
    );
}

/// Tests build labs of one prefix in parallel, so two builds may reap the
/// same dead lab at once: what the other removed first is not an error.
#[test]
fn builds_reaping_one_dead_lab_at_once_all_succeed() {
    if !require_root("lab::topo::builds_reaping_one_dead_lab_at_once_all_succeed") {
        return;
    }
    let dead = dead_pid();
    let (names, markers): (Vec<String>, Vec<PathBuf>) =
        (0..4).map(|k| plant_dead_lab("ntreapc", dead, k)).unzip();
    let go = std::sync::Arc::new(std::sync::Barrier::new(8));
    let reapers: Vec<_> = (0..8)
        .map(|_| {
            let go = go.clone();
            std::thread::spawn(move || {
                go.wait();
                Lab::reap_stale("ntreapc")
            })
        })
        .collect();
    let results: Vec<_> = reapers.into_iter().map(|h| h.join().unwrap()).collect();
    let list = netns_list();
    for n in &names {
        if list.contains(n.as_str()) {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
    for m in &markers {
        let _ = std::fs::remove_file(m);
    }
    for r in &results {
        assert!(r.is_ok(), "{r:?}");
    }
    for n in &names {
        assert!(!list.contains(n.as_str()), "{list}");
    }
    let reaped: usize = results
        .iter()
        .flatten()
        .flatten()
        .map(|r| r.netns.len())
        .sum();
    assert_eq!(
        reaped,
        names.len(),
        "each namespace reaped once: {results:?}"
    );
}

#[test]
fn a_reaper_finds_what_another_removed_first_gone_not_failed() {
    let gone = std::env::temp_dir().join(format!("ntreap-gone-{}.pid", std::process::id()));
    assert!(!remove_marker(&gone).unwrap());
    std::fs::write(&gone, "1 1\n").unwrap();
    assert!(remove_marker(&gone).unwrap());
    assert!(!gone.exists());
}

#[test]
fn source_pool_addresses_sit_above_the_link_slots() {
    let a = SourcePool::addrs(1, 32).unwrap();
    assert_eq!(a.len(), 32);
    assert_eq!(a[0], Ipv4Addr::new(198, 19, 1, 1));
    assert_eq!(a[31], Ipv4Addr::new(198, 19, 1, 32));
    // Never one of the links' /30s (slots 0..31 of 198.18.0.0/24).
    let (_, last) = crate::slot_addrs(MAX_HOSTS);
    assert!(a.iter().all(|x| x.octets()[1] == 19 && *x > last));
    assert_eq!(SourcePool::addrs(0, 4), None, "the hub has no pool");
    assert_eq!(SourcePool::addrs(1, 0), None);
    assert_eq!(SourcePool::addrs(1, 251), None);
    assert_eq!(SourcePool::addrs(256, 4), None);
}

#[test]
fn source_pool_addresses_answer_the_hub() {
    if !require_root("lab::topo::source_pool_addresses_answer_the_hub") {
        return;
    }
    let lab = Lab::build(LabSpec::new(2, 1)).unwrap();
    let pool = lab.add_source_pool(1, 3).unwrap();
    assert_eq!(pool.list().len(), 3);
    let hub = lab.addr(0).unwrap();
    for a in pool.list() {
        let out = lab.hosts()[1]
            .sh(&format!("ping -c1 -W1 -I {a} {hub}"))
            .unwrap();
        assert!(out.contains("1 received"), "{a}: {out}");
    }
    let tw = lab.hosts()[1]
        .sh("cat /proc/sys/net/ipv4/tcp_max_tw_buckets")
        .unwrap();
    assert_eq!(tw.trim(), "196608");
    assert!(lab.add_source_pool(0, 3).is_err());
    assert!(lab.add_source_pool(1, 0).is_err());
}
