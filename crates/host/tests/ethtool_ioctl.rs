//! The driver counters read with the `SIOCETHTOOL` ioctl against a veth pair
//! in a network namespace this test creates: the same names as `ethtool -S`
//! parsed by the existing parser, values between two ethtool reads taken
//! before and after; and the live sampler gets them without running
//! ethtool(8) (PATH emptied while it samples).
//!
//! Needs root, `ip` and `ethtool`; skipped (with a message) otherwise.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use model::parse::ethtool_stats::{parse_ethtool_stats, NicStats};
use model::snapshot::Probe;
use nettune_host::ethtool::ioctl::IoctlStats;
use nettune_host::sampler::Sampler;
use nettune_host::Root;
use std::process::Command;

struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

fn ethtool_s(ns: &str, iface: &str) -> NicStats {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-S", iface])
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    parse_ethtool_stats(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

/// Run `f` on a thread that has entered network namespace `ns`.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = std::fs::File::open(&path).unwrap();
        rustix::thread::move_into_link_name_space(
            std::os::fd::AsFd::as_fd(&fd),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .unwrap();
        f()
    })
    .join()
    .unwrap()
}

fn within(lo: &NicStats, got: &NicStats, hi: &NicStats) {
    let names = |s: &NicStats| s.driver.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(got), names(lo), "names differ from ethtool -S");
    for (k, v) in &got.driver {
        assert!(
            lo.driver[k] <= *v && *v <= hi.driver[k],
            "{k}: {} <= {v} <= {} does not hold",
            lo.driver[k],
            hi.driver[k]
        );
    }
}

#[test]
fn ioctl_matches_ethtool_on_a_veth_pair() {
    if !rustix::process::geteuid().is_root()
        || Command::new("ethtool").arg("--version").output().is_err()
    {
        eprintln!("skipped: needs root and ethtool(8)");
        return;
    }
    let ns = Netns(format!("h17m-{}", std::process::id()));
    if !ip(&["netns", "add", &ns.0]) {
        eprintln!("skipped: cannot create a network namespace");
        return;
    }
    assert!(ip(&[
        "-n", &ns.0, "link", "add", "va", "type", "veth", "peer", "name", "vb"
    ]));
    assert!(ip(&["-n", &ns.0, "link", "set", "va", "up"]));
    assert!(ip(&["-n", &ns.0, "link", "set", "vb", "up"]));

    let before = ethtool_s(&ns.0, "va");
    assert!(!before.driver.is_empty(), "veth reports counters");
    let (direct, again, lo) = in_netns(&ns.0, || {
        let mut io = IoctlStats::new();
        let a = io.read("va").unwrap();
        // The second read takes the cached names (one GSTATS).
        let b = io.read("va").unwrap();
        (a, b, io.read("lo").unwrap())
    });
    // The sampler, live, with no ethtool(8) on PATH: the old code ran
    // `ethtool -S` per interface and found nothing.
    let path = std::env::var_os("PATH");
    std::env::set_var("PATH", "/nonexistent");
    let sampled = in_netns(&ns.0, || {
        let mut s = Sampler::new(Root::live()).with_nic_stats(&["va".to_string()]);
        s.sample().unwrap()
    });
    if let Some(p) = path {
        std::env::set_var("PATH", p);
    }
    let after = ethtool_s(&ns.0, "va");

    let Probe::Ok { value: direct } = direct else {
        panic!("{direct:?}")
    };
    let Probe::Ok { value: again } = again else {
        panic!("{again:?}")
    };
    within(&before, &direct, &after);
    within(&before, &again, &after);
    assert!(matches!(lo, Probe::Unsupported { .. }), "{lo:?}");
    assert!(sampled.missing.is_empty(), "{:?}", sampled.missing);
    within(&before, &sampled.nic["va"], &after);
}
