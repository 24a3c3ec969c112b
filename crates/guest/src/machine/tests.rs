use super::*;

fn machine(nics: Vec<Nic>) -> Machine {
    Machine {
        name: GuestName::new("e1000e-a").unwrap(),
        kernel: "/c/vmlinuz".into(),
        initrd: "/r/initrd".into(),
        run_dir: "/r".into(),
        accel: Accel::Tcg,
        mem_mib: 512,
        nics,
        capture: false,
    }
}

fn line(m: &Machine) -> String {
    m.args()
        .unwrap()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_command_line_has_two_nodes_a_node1_bridge_and_the_agent_port() {
    let m = machine(vec![
        Nic {
            model: NicModel::E1000_82545em,
            netdev: Netdev::Udp {
                local: 40002,
                remote: 40001,
            },
            node1: false,
        },
        Nic {
            model: NicModel::E1000e,
            netdev: Netdev::UserRestricted,
            node1: true,
        },
    ]);
    assert_eq!(
        line(&m),
        "-name e1000e-a -machine q35 -accel tcg,thread=multi -smp 2 -m 512 \
         -object memory-backend-ram,id=mem0,size=256M -numa node,nodeid=0,cpus=0,memdev=mem0 \
         -object memory-backend-ram,id=mem1,size=256M -numa node,nodeid=1,cpus=1,memdev=mem1 \
         -nodefaults -no-user-config -display none -no-reboot \
         -kernel /c/vmlinuz -initrd /r/initrd \
         -append console=ttyS0 panic=-1 rdinit=/init loglevel=4 \
         -chardev file,id=console,path=/r/console.log -serial chardev:console \
         -device pxb-pcie,id=pxb1,bus_nr=128,bus=pcie.0,numa_node=1 \
         -netdev socket,id=net0,udp=127.0.0.1:40001,localaddr=127.0.0.1:40002 \
         -device e1000-82545em,netdev=net0,mac=52:54:00:d3:0f:00,bus=pcie.0 \
         -device pcie-root-port,id=rp1,bus=pxb1,chassis=1 \
         -netdev user,id=net1,restrict=on \
         -device e1000e,netdev=net1,mac=52:54:00:d3:0f:01,bus=rp1 \
         -device virtio-rng-pci,bus=pcie.0 \
         -device virtio-serial-pci,id=vser,bus=pcie.0 \
         -chardev socket,id=agent,path=/r/agent.sock,server=on,wait=off \
         -device virtserialport,bus=vser.0,chardev=agent,name=nettune \
         -chardev socket,id=ctl,path=/r/control.sock,server=on,wait=off \
         -device virtserialport,bus=vser.0,chardev=ctl,name=nettune-ctl"
    );
}

#[test]
fn a_capture_goes_to_a_file_port() {
    let m = Machine {
        capture: true,
        ..machine(vec![])
    };
    assert!(line(&m).ends_with(
        "-chardev file,id=cap,path=/r/capture.tar \
         -device virtserialport,bus=vser.0,chardev=cap,name=nettune-capture"
    ));
}

#[test]
fn kvm_is_asked_for_by_name() {
    let m = Machine {
        accel: Accel::Kvm,
        ..machine(vec![])
    };
    assert!(line(&m).contains("-accel kvm -smp 2"));
}

#[test]
fn machines_qemu_would_misread_are_refused_with_the_guests_name() {
    let comma = Machine {
        run_dir: "/r,x".into(),
        ..machine(vec![])
    };
    let e = comma.args().unwrap_err().to_string();
    assert!(e.starts_with("guest e1000e-a:"), "{e}");
    let odd = Machine {
        mem_mib: 511,
        ..machine(vec![])
    };
    assert!(odd.args().is_err());
    let same = machine(vec![Nic {
        model: NicModel::Vmxnet3,
        netdev: Netdev::Udp {
            local: 5,
            remote: 5,
        },
        node1: false,
    }]);
    assert!(same.args().unwrap_err().to_string().contains("NIC 0"));
}

#[test]
fn names_are_file_and_id_safe() {
    for bad in ["", "-a", "A", "a/b", "a b", &"x".repeat(33)] {
        assert!(GuestName::new(bad).is_err(), "{bad:?}");
    }
    assert!(GuestName::new("vmxnet3-0").is_ok());
}

#[test]
fn every_model_has_a_device_and_a_driver() {
    for m in NicModel::ALL {
        assert_eq!(NicModel::from_device(m.device()), Some(m));
    }
    assert_eq!(NicModel::E1000_82540em.driver(), "e1000");
    assert_eq!(NicModel::VirtioNet.device(), "virtio-net-pci");
}

#[test]
fn a_multi_queue_tap_gives_virtio_net_mq_and_a_vector_per_queue() {
    let m = machine(vec![Nic {
        model: NicModel::VirtioNet,
        netdev: Netdev::Tap { queues: 2 },
        node1: false,
    }]);
    assert!(line(&m).contains(
        "-netdev tap,id=net0,ifname=ntg0,script=no,downscript=no,queues=2 \
         -device virtio-net-pci,mq=on,vectors=6,netdev=net0,mac=52:54:00:d3:0f:00,bus=pcie.0"
    ));
    let e1000 = machine(vec![Nic {
        model: NicModel::E1000e,
        netdev: Netdev::Tap { queues: 2 },
        node1: false,
    }]);
    let e = e1000.args().unwrap_err().to_string();
    assert!(e.contains("needs virtio-net-pci, not e1000e"), "{e}");
    let none = machine(vec![Nic {
        model: NicModel::VirtioNet,
        netdev: Netdev::Tap { queues: 0 },
        node1: false,
    }]);
    assert!(none.args().is_err());
}

#[test]
fn kernel_arguments_are_appended_only_as_plain_name_value_words() {
    let m = machine(vec![]);
    let args: Vec<String> = m
        .args_with(&["NETTUNE_TEST_PAUSE_AFTER_WRITES=2".into()])
        .unwrap()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert!(args.contains(
        &"console=ttyS0 panic=-1 rdinit=/init loglevel=4 NETTUNE_TEST_PAUSE_AFTER_WRITES=2"
            .to_string()
    ));
    for bad in ["x", "=1", "A=1 init=/bin/sh", "A=$(x)", "A-B=1"] {
        assert!(m.args_with(&[bad.into()]).is_err(), "{bad:?}");
    }
}

#[test]
fn guests_of_different_names_have_different_macs() {
    let mut names = vec![crate::study::SERVER.to_string()];
    names.extend((1..=crate::study::MAX_CLIENTS).map(|i| format!("client{i}")));
    names.push("e1000e-a".into());
    let mut seen = std::collections::BTreeMap::new();
    for n in &names {
        let mut m = machine(vec![]);
        m.name = GuestName::new(n).unwrap();
        for i in 0..=crate::study::MAX_CLIENTS {
            let mac = m.mac(i);
            assert!(mac.starts_with("52:54:00:"), "{mac}");
            if let Some(other) = seen.insert(mac.clone(), format!("{n} NIC {i}")) {
                panic!("{n} NIC {i} and {other} share {mac}");
            }
        }
    }
}
