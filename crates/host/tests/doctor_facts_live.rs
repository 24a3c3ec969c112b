//! Doctor's facts read from the live host: nothing panics, and what this
//! machine (KVM guest, kernel 6.18) has is read, what it lacks is missing
//! with the file named.

use nettune_host::doctor_facts::read_doctor_facts;
use nettune_host::ethtool::NoEthtool;
use nettune_host::{read_snapshot_with, Root};

#[test]
fn live_facts_read_or_name_the_missing_file() {
    let root = Root::live();
    let snap = read_snapshot_with(&root, &NoEthtool);
    let f = read_doctor_facts(&root, &snap);
    // Every kernel nettune supports has sockstat and tcp_mem.
    let m = f.tcp_memory.get().expect("sockstat");
    assert!(m.sockstat.get("TCP", "inuse").is_some());
    assert!(m.tcp_mem.is_some_and(|t| t[0] <= t[1] && t[1] <= t[2]));
    // Missing parts name a path.
    for (what, reason) in [
        ("power", f.power.get().err()),
        ("conntrack", f.conntrack.get().err()),
        ("qdiscs", f.qdiscs.get().err()),
        ("processes", f.processes.get().err()),
        ("tcp_sockets", f.tcp_sockets.get().err()),
    ] {
        if let Some(r) = reason.map(|m| m.to_string()) {
            assert!(r.contains('/') || r.contains("netlink"), "{what}: {r}");
            eprintln!("{what}: missing: {r}");
        }
    }
    if let Some(q) = f.qdiscs.value() {
        // Every interface that is up has a root qdisc (noqueue for lo counts);
        // a down one may have none.
        for i in snap
            .interfaces
            .iter()
            .filter(|i| i.operstate.as_deref() == Some("up"))
        {
            assert!(
                q.iter().any(|x| x.interface == i.name && x.root),
                "{} has no root qdisc: {q:?}",
                i.name
            );
        }
    }
    eprintln!("{}", serde_json::to_string_pretty(&f).unwrap_or_default());
}

/// A loopback connection this test makes is found by `INET_DIAG` with its
/// ports and a measured RTT, proving the decoder's offsets on this kernel.
#[test]
fn inet_diag_sees_our_own_connection() {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let (mut s, _) = l.accept().unwrap();
    for _ in 0..20 {
        c.write_all(b"ping").unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).unwrap();
        s.write_all(&b).unwrap();
        c.read_exact(&mut b).unwrap();
    }
    let socks = match nettune_host::nldump::dump_tcp_sockets() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("skipped: sock_diag unavailable: {e}");
            return;
        }
    };
    let ours = socks
        .iter()
        .find(|x| x.remote_port == port && x.local_port == c.local_addr().unwrap().port())
        .unwrap_or_else(|| panic!("our connection to port {port} not in {socks:?}"));
    assert!(ours.is_loopback());
    assert!(ours.rtt_us > 0, "{ours:?}");
    assert!(ours.snd_mss > 0 && ours.snd_cwnd > 0, "{ours:?}");
    assert!(ours.bytes_acked.is_some_and(|b| b >= 80), "{ours:?}");
}
