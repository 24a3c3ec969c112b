use super::*;
use crate::initramfs::init_script;

fn star(clients: usize) -> Star {
    Star {
        model: NicModel::E1000_82545em,
        clients,
        base_port: 40000,
    }
}

/// Each client's NIC is the server's NIC of its link with the ports
/// swapped: the two UDP sockets are one wire.
#[test]
fn each_client_shares_a_wire_with_one_server_nic() {
    let m = star(3).members().unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(m[0].name.as_str(), "server");
    assert_eq!(m[0].nics.len(), 3);
    for (i, c) in m[1..].iter().enumerate() {
        assert_eq!(c.name.as_str(), format!("client{}", i + 1));
        let (
            Netdev::Udp { local, remote },
            Netdev::Udp {
                local: sl,
                remote: sr,
            },
        ) = (c.nics[0].netdev, m[0].nics[i].netdev)
        else {
            panic!("not UDP")
        };
        assert_eq!((local, remote), (sr, sl));
        assert_eq!(c.server_address, Some(m[0].addrs[i]));
        assert_eq!(c.addrs[0].octets()[..3], m[0].addrs[i].octets()[..3]);
        assert_ne!(c.addrs[0], m[0].addrs[i]);
    }
    let mut ports: Vec<u16> = m
        .iter()
        .flat_map(|g| g.nics.iter())
        .map(|n| match n.netdev {
            Netdev::Udp { local, .. } => local,
            Netdev::UserRestricted | Netdev::Tap { .. } => 0,
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports, (40000..40006).collect::<Vec<_>>());
    // the range `guest up` checks free is exactly the ports the links use
    assert_eq!(star(3).port_range(), (40000, 40005));
    assert_eq!(star(1).port_range(), (40000, 40001));
}

#[test]
fn a_star_the_server_cannot_hold_or_ports_out_of_range_are_refused() {
    for (clients, base) in [(0, 40000), (9, 40000), (1, 80), (8, 65530)] {
        let s = Star {
            base_port: base,
            ..star(clients)
        };
        let e = s.members().unwrap_err().to_string();
        assert!(e.starts_with("guest server: "), "{e}");
    }
}

#[test]
fn the_inventory_names_each_socket_role_and_server_address() {
    let s = star(2);
    let m = s.members().unwrap();
    let inv = s.inventory(&m, Path::new("/run/g \"x\""));
    assert!(inv.contains("name = \"server\"\ntransport = \"guest\"\nsocket = \"/run/g \\\"x\\\"/server/agent.sock\"\nroles = [\"server\"]"), "{inv}");
    assert!(inv.contains("name = \"client2\""), "{inv}");
    assert!(inv.contains("server_address = \"10.77.2.1\""), "{inv}");
    assert_eq!(inv.matches("[[host]]").count(), 3);
    assert_eq!(inv.matches("roles = [\"clients\"]").count(), 2);
}

/// The addresses are set after the modules load and the links come up,
/// before the guest says it is ready (the controller connects then).
#[test]
fn the_addresses_go_into_init_before_the_ready_line() {
    let mut a = Archive::default();
    a.bytes(
        "init",
        init_script(&["/m/e1000.ko".into()], &[]).into_bytes(),
        0o755,
    );
    set_addresses(
        &mut a,
        "server",
        &[Ipv4Addr::new(10, 77, 1, 1), Ipv4Addr::new(10, 77, 2, 1)],
    )
    .unwrap();
    let Source::Bytes(b) = &a.entries()[0].source else {
        panic!()
    };
    let s = String::from_utf8(b.clone()).unwrap();
    let up = s.find("ip link set \"${i##*/}\" up").unwrap();
    let insmod = s.find("insmod /m/e1000.ko").unwrap();
    let a1 = s.find("ip addr add 10.77.1.1/24 dev eth0").unwrap();
    let a2 = s.find("ip addr add 10.77.2.1/24 dev eth1").unwrap();
    let ready = s.find(READY).unwrap();
    assert!(insmod < up && up < a1 && a1 < a2 && a2 < ready, "{s}");
    assert_eq!(a.entries().len(), 1);
}

#[test]
fn an_init_without_a_ready_line_is_refused() {
    let mut a = Archive::default();
    a.bytes("init", b"#!/bin/sh\n".to_vec(), 0o755);
    let e = set_addresses(&mut a, "client1", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("client1") && e.contains("ready line"), "{e}");
}
