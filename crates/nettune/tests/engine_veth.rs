//! Every test type between two network namespaces joined by a veth pair:
//! `nettune serve` in one, `nettune bench` in the other, with the results
//! bounded by the receiving namespace's own counters.

mod engine_common;
use engine_common::*;

#[test]
fn every_test_type_over_veth() {
    if !lab::require_root("engine_veth::every_test_type_over_veth") {
        return;
    }
    let lab = lab::TwoHosts::create("nteng", 2).unwrap();
    let _server = lab
        .b
        .spawn(BIN, &["serve", "--port", "5290", "-q"])
        .unwrap();
    let addr = lab.b_end.addr.to_string();
    wait_listening(&lab.b, 5290);
    for (test, extra) in [
        ("tcp-stream", vec!["--flows", "2"]),
        ("udp-stream", vec!["--size", "64"]),
        ("udp-stream", vec!["--size", "64", "--reverse"]),
        ("tcp-stream", vec!["--bidir"]),
        ("tcp-rr", vec![]),
        ("udp-rr", vec![]),
        ("tcp-crr", vec![]),
    ] {
        // The receiving namespace: the server's, or the client's for --reverse.
        let (rx_ns, rx_if) = if extra.contains(&"--reverse") {
            (&lab.a, "nt0")
        } else {
            (&lab.b, "nt1")
        };
        let snmp0 = rx_ns.sh("cat /proc/net/snmp").unwrap();
        let dev0 = rx_ns.sh("cat /proc/net/dev").unwrap();
        let mut args = vec!["bench", addr.as_str(), "--test", test, "--json"];
        args.extend_from_slice(QUICK);
        args.extend(extra.iter().copied());
        let out = lab.a.command(BIN).args(&args).output().unwrap();
        let r = json(&out);
        sane(&r, test);
        let snmp1 = rx_ns.sh("cat /proc/net/snmp").unwrap();
        let dev1 = rx_ns.sh("cat /proc/net/dev").unwrap();
        let rx = dev_rx_bytes(&dev1, rx_if) - dev_rx_bytes(&dev0, rx_if);
        let d = &r["results"][0];
        // Payload the receiver saw cannot exceed what arrived on its interface.
        let payload = u(&d["bytes"]);
        assert!(
            payload <= rx,
            "{test}: payload {payload} > nt1 rx bytes {rx}"
        );
        if test == "udp-stream" {
            let (in0, _) = snmp_udp(&snmp0);
            let (in1, _) = snmp_udp(&snmp1);
            let kernel = in1 - in0;
            let app = u(&d["udp"]["received"]);
            assert!(
                app <= kernel,
                "{test}: app {app} > kernel InDatagrams {kernel}"
            );
            // Only our datagrams arrive in this namespace: within 0.5 %.
            assert!(
                (kernel - app) as f64 <= kernel as f64 * 0.005,
                "{test}: app {app} vs kernel {kernel}"
            );
            let k = &d["kernel_check"];
            assert_eq!(k["agrees"], true, "{k}");
        }
    }
}
