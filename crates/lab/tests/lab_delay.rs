//! Labs with delay through the userspace delay line where the kernel has no
//! netem (root only; skips with a reason otherwise). Bounds are wide: the
//! machine is shared and loaded.

use nettune_lab::{have, require_root, run_text, DelayMechanism, Lab, LabSpec, MechanismChoice};
use std::process::Command;
use std::time::Duration;

fn kernel_has_netem() -> bool {
    let probe = nettune_lab::Netns::create("ntprobe").expect("probe namespace");
    nettune_lab::probe_netem(&probe) == DelayMechanism::Netem
}

/// Sorted RTTs (ms) of `ping -n -c COUNT -i 0.1 -W 2` from host 0 to host 1.
fn ping(lab: &Lab, count: u32) -> Vec<f64> {
    let to = lab.addr(1).expect("host 1 address").to_string();
    let out = lab.hosts()[0]
        .command("ping")
        .args(["-n", "-c", &count.to_string(), "-i", "0.1", "-W", "2", &to])
        .output()
        .expect("run ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rtts: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    rtts.sort_by(f64::total_cmp);
    rtts
}

#[test]
fn two_hosts_with_20ms_use_the_delay_line_without_netem_and_ping_shows_it() {
    if !require_root("two_hosts_with_20ms_use_the_delay_line_without_netem_and_ping_shows_it") {
        return;
    }
    let netem = kernel_has_netem();
    let lab = Lab::build(LabSpec {
        prefix: "ntlabdl".into(),
        delay: Some(Duration::from_millis(20)),
        ..LabSpec::new(2, 1)
    })
    .expect("a lab with delay builds on this kernel");
    let mech = lab.delay_mechanism();
    if netem {
        assert_eq!(*mech, DelayMechanism::Netem, "netem stays the first choice");
    } else {
        assert_eq!(*mech, DelayMechanism::Userspace);
        assert_eq!(mech.to_string(), "userspace delay line (TUN)");
        let spec = lab.delay_spec().expect("the line's spec is reported");
        assert_eq!(
            spec.delay,
            Duration::from_millis(10),
            "half the RTT each way"
        );
        assert!(
            spec.limit_packets >= 1000 && spec.limit_bytes >= 1 << 20,
            "{spec:?}"
        );
        let link = lab.hosts()[0].ip(&["-d", "link", "show", "v1"]).unwrap();
        assert!(link.contains("tun"), "host 0's end is a TUN device: {link}");
    }
    // Never under the delay asked, in every round; the median near it in one
    // of three (a busy machine adds scheduling delay to a round, a line that
    // applies the delay twice fails all three).
    let mut seen = Vec::new();
    let near = (0..3).any(|_| {
        let rtts = ping(&lab, 10);
        assert!(rtts.len() >= 8, "most pings cross: {rtts:?}");
        assert!(rtts[0] >= 20.0, "no RTT under the 20 ms asked: {rtts:?}");
        let median = rtts[rtts.len() / 2];
        seen.push(rtts);
        median < 35.0
    });
    assert!(
        near,
        "median RTT near 20 ms in one of three rounds: {seen:?}"
    );
}

#[test]
fn rate_and_delay_together_limit_throughput_near_the_rate() {
    if !require_root("rate_and_delay_together_limit_throughput_near_the_rate") {
        return;
    }
    if !have("iperf3") {
        eprintln!("skipping rate_and_delay_together_limit_throughput_near_the_rate: no iperf3");
        return;
    }
    let rate = 20_000_000u64;
    let lab = Lab::build(LabSpec {
        prefix: "ntlabdl".into(),
        rate: Some(rate),
        delay: Some(Duration::from_millis(10)),
        mechanism: MechanismChoice::Userspace,
        ..LabSpec::new(2, 1)
    })
    .expect("lab");
    let to = lab.addr(1).unwrap().to_string();
    let want = rate as f64 / 1e6;
    // Never above the rate (every round); near it in one of three rounds
    // (a busy machine may starve one round's sender; a limiter that passes
    // a tenth of the rate fails all three).
    let mut seen = Vec::new();
    let near = (0..3).any(|_| {
        let _srv = lab.hosts()[1]
            .spawn("iperf3", &["-s", "-1", "-B", &to])
            .expect("iperf3 server");
        std::thread::sleep(Duration::from_millis(500));
        let out = lab.hosts()[0]
            .command("timeout")
            .args(["20", "iperf3", "-c", &to, "-t", "4", "-O", "1", "-f", "m"])
            .output()
            .expect("iperf3 client");
        let text = String::from_utf8_lossy(&out.stdout);
        // The receiver's line: "[  5]   0.00-4.04  sec  9.12 MBytes  18.9 Mbits/sec  receiver".
        let mbit: f64 = text
            .lines()
            .find(|l| l.trim_end().ends_with("receiver"))
            .and_then(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let i = w.iter().position(|x| *x == "Mbits/sec")?;
                w.get(i.checked_sub(1)?)?.parse().ok()
            })
            .unwrap_or_else(|| panic!("no receiver line in {text}"));
        assert!(
            mbit <= want * 1.1,
            "{mbit} Mbit/s through a {want} Mbit/s link: {text}"
        );
        seen.push(mbit);
        mbit >= want * 0.5
    });
    assert!(
        near,
        "{seen:?} Mbit/s through a {want} Mbit/s link, never half of it"
    );
}

#[test]
fn netem_required_without_netem_is_a_typed_error_and_leaves_nothing() {
    if !require_root("netem_required_without_netem_is_a_typed_error_and_leaves_nothing") {
        return;
    }
    if kernel_has_netem() {
        eprintln!("skipping: this kernel has netem, so requiring it cannot fail");
        return;
    }
    let r = Lab::build(LabSpec {
        prefix: "ntlabne".into(),
        loss: Some(1.0),
        mechanism: MechanismChoice::Netem,
        ..LabSpec::new(2, 1)
    });
    match r {
        Err(nettune_lab::LabError::NoDelayMechanism { asked, reason }) => {
            assert!(asked.contains("loss"), "{asked}");
            assert!(reason.contains("netem"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let me = format!("ntlabne-{}-", std::process::id());
    let list = run_text(Command::new("ip").args(["netns", "list"])).unwrap_or_default();
    assert!(!list.contains(&me), "{list}");
}
