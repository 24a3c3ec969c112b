//! Live doctor's samples carry the NIC driver counters (`ethtool -S`), so
//! `nic-drops` and `cloud-allowance` judge their growth over the window, as
//! they do on a capture's recorded samples. Reads the live host only.

#![allow(clippy::unwrap_used)]

use host::Root;
use std::process::Command;
use std::time::Duration;

/// An interface (not `lo`) whose `ethtool -S` answers with counters.
fn iface_with_counters() -> Option<String> {
    let dir = std::fs::read_dir("/sys/class/net").ok()?;
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "lo")
        .collect();
    names.sort();
    names.into_iter().find(|n| {
        Command::new("ethtool")
            .args(["-S", n])
            .output()
            .is_ok_and(|o| o.status.success() && o.stdout.len() > 20)
    })
}

#[test]
fn live_samples_read_the_driver_counters() {
    let Some(iface) = iface_with_counters() else {
        eprintln!("skipped: no interface answers `ethtool -S` here");
        return;
    };
    let samples =
        nettune::cmd::doctor::sample_live(&Root::live(), Duration::from_millis(200)).unwrap();
    assert!(samples.len() >= 2);
    for s in &samples {
        let nic = s.nic.get(&iface);
        assert!(
            nic.is_some_and(|n| !n.driver.is_empty()),
            "{iface}: no driver counters in a live sample: {:?}",
            s.nic.keys().collect::<Vec<_>>()
        );
    }
}
