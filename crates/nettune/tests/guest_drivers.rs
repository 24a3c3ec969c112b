//! Real Linux drivers in QEMU guests (docs/guests.md): one guest per
//! emulated NIC, booted from Debian's kernel package and a busybox
//! initramfs carrying this build's nettune, reached through the fleet's
//! guest transport (the agent on a virtio-serial port).
//!
//! Each test holds the driver's queue → IRQ → affinity table, read live by
//! `inspect` through the agent, to a golden file (`guest_goldens/`), and
//! checks that the guest's own `nettune capture`, read back with `--root`,
//! gives the same table. Without QEMU or the kernel cache the tests skip
//! with the one line naming what to install, except under `CI=true`, where
//! that is a failure (`.ci/run` installs both).
//!
//! `NETTUNE_GUEST_BLESS=1` rewrites the goldens; `NETTUNE_GUEST_FIXTURES=1`
//! writes the captures to `tests/fixtures/guest-DEVICE/` with their LABEL.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod guest_common;

use fleet::client::Agent;
use guest::run::Shutdown;
use guest::{Guest, NicModel};
use guest_common::*;
use guest_common::{channels, profiles, reload};
use serde_json::Value;
use std::ffi::OsStr;
use std::time::Instant;

/// Boot a guest with one `model` NIC, hold its table to the golden and its
/// boot-time capture to the same table, then run `then` on the same guest
/// (further checks reuse the boot) and power it off.
fn driver_in_a_guest(model: NicModel, node1: bool, then: impl FnOnce(Agent, &Guest)) {
    let Some((qemu, kernel)) = machine_or_skip() else {
        return;
    };
    let device = model.device();
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let g = boot(&qemu, &kernel, model, node1, dir.path());
    let booted = t0.elapsed();
    let mut agent = connect(&g);
    let ready = t0.elapsed();
    let live = table(&inspect(&mut agent));
    assert!(
        live.contains(&format!("driver {}", model.driver())),
        "{live}"
    );
    check_golden(device, &live);

    let captured = extract_capture(&g, dir.path());
    assert_eq!(
        table(&inspect_root(&captured)),
        live,
        "{device}: the capture reads back otherwise"
    );
    let format = dir.path().join("tracing/kfree_skb-format");
    let text = std::fs::read_to_string(&format).unwrap_or_default();
    assert!(
        text.contains("name: kfree_skb") && text.contains("reason"),
        "{device}: no skb:kfree_skb format from the guest's tracefs: {text:?}"
    );
    if std::env::var("NETTUNE_GUEST_FIXTURES").as_deref() == Ok("1") {
        let netdev = "user-mode netdev with restrict=on";
        let version = qemu_version(&qemu);
        write_fixture(device, model, &captured, &version, &kernel, node1, netdev);
        if model == NicModel::E1000_82545em {
            write_kfree_skb_format(&format, &version, &kernel);
        }
    }
    let t1 = Instant::now();
    then(agent, &g);
    let checks = t1.elapsed();
    let t2 = Instant::now();
    assert_eq!(g.shutdown(SHUTDOWN_DEADLINE), Shutdown::Clean);
    eprintln!(
        "{device}: ready (console) {:.1} s, agent answered {:.1} s, further checks {:.1} s, shutdown {:.1} s",
        booted.as_secs_f64(),
        ready.as_secs_f64(),
        checks.as_secs_f64(),
        t2.elapsed().as_secs_f64()
    );
}

#[test]
fn e1000_82545em_in_a_guest() {
    driver_in_a_guest(NicModel::E1000_82545em, false, |_, _| {});
}

/// QEMU's default NIC; its e1000 takes no `ethtool -C`, only the
/// `InterruptThrottleRate` module parameter, applied here through a real
/// reload of the driver.
#[test]
fn e1000_82540em_in_a_guest_and_its_itr_through_a_reload() {
    driver_in_a_guest(NicModel::E1000_82540em, false, reload::itr_through_a_reload);
}

/// The e1000e guest also runs every profile, a value the driver refuses
/// and doctor after an apply (one boot for all).
#[test]
fn e1000e_in_a_guest_on_node_1() {
    driver_in_a_guest(NicModel::E1000e, true, |mut agent, g| {
        profiles::every_profile_applies_verifies_and_rolls_back(&mut agent);
        profiles::a_refused_value_rolls_the_whole_apply_back(&mut agent);
        profiles::doctor_sees_no_placement_warning_after_the_apply(&mut agent);
        // The guest's agent port serves one connection at a time.
        drop(agent);
        profiles::the_fleet_reaches_the_guest_from_an_inventory(g);
    });
}

/// The vmxnet3 guest also refuses a channel change (no `set_channels`).
#[test]
fn vmxnet3_in_a_guest() {
    driver_in_a_guest(
        NicModel::Vmxnet3,
        false,
        channels::vmxnet3_refuses_a_channel_change,
    );
}

/// The committed captures give the golden tables with no QEMU at all.
#[test]
fn the_guest_fixtures_read_back_as_the_goldens() {
    for model in [
        NicModel::E1000_82545em,
        NicModel::E1000_82540em,
        NicModel::E1000e,
        NicModel::Vmxnet3,
    ] {
        let device = model.device();
        let got = table(&inspect_root(&fixture(device)));
        let want = std::fs::read_to_string(golden(device)).unwrap();
        assert_eq!(got, want, "{device}");
    }
}

/// The real e1000 leaves receive checksum offload off when it loads
/// (e1000_probe adds NETIF_F_RXCSUM to hw_features only after copying
/// hw_features to features), so nothing on the host turned it off: doctor
/// says so instead of sending the operator after a udev rule.
#[test]
fn doctor_knows_e1000_leaves_rx_checksum_off_by_itself() {
    let [a, b, c] = ["doctor", "--json", "--root"].map(OsStr::new);
    let root = fixture("e1000-82545em");
    // doctor's exit status says a warning was found; its JSON is what counts.
    let out = run(&[a, b, c, root.as_os_str()]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["id"] == "offload-off")
        .unwrap_or_else(|| panic!("no offload-off: {v:#}"));
    let fix = f["fix"].to_string();
    assert!(!fix.contains("remove whatever turns them off"), "{fix}");
    assert!(fix.contains("e1000 leaves rx-checksum off"), "{fix}");
    assert!(
        f["evidence"]
            .to_string()
            .contains("the e1000 driver's default"),
        "{f:#}"
    );
}
