//! Doctor's facts read from fixture roots: the c4.8xlarge and two-socket
//! fixtures with the overlays of `tests/fixtures/doctor/make-doctor.py`,
//! the bare fixtures (every part missing with its file named), corrupt
//! files, and a capture that replays them.

#![allow(clippy::unwrap_used)]

use model::doctor_facts::{Cloud, DoctorFacts};
use nettune_host::capture::capture_from;
use nettune_host::doctor_facts::read_doctor_facts;
use nettune_host::ethtool::FixtureEthtool;
use nettune_host::{read_snapshot, Root};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A temp copy of fixture `base` with overlay `doctor/<overlay>` laid over it.
fn root_with(base: &str, overlay: Option<&str>) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    assert!(Command::new("cp")
        .arg("-a")
        .arg(fixtures().join(base))
        .arg(&root)
        .status()
        .unwrap()
        .success());
    if let Some(o) = overlay {
        let mut src = fixtures().join("doctor").join(o).into_os_string();
        src.push("/.");
        assert!(Command::new("cp")
            .arg("-a")
            .arg(src)
            .arg(&root)
            .status()
            .unwrap()
            .success());
    }
    t
}

fn facts(dir: &Path) -> DoctorFacts {
    let root = Root::new(dir);
    let snap = read_snapshot(&root);
    read_doctor_facts(&root, &snap)
}

#[test]
fn c4_busy_overlay_reads_every_part() {
    let t = root_with("c4-8xlarge", Some("c4-8xlarge-busy"));
    let f = facts(&t.path().join("root"));
    let p = f.power.get().unwrap();
    assert_eq!(p.governors.len(), 36);
    assert_eq!(p.governors[&0], "powersave");
    assert_eq!(p.scaling_driver.as_deref(), Some("intel_pstate"));
    assert_eq!(
        p.deep_states_allowed(20).len(),
        36 * 2,
        "C3 and C6 on 36 CPUs"
    );
    // The batch job without sockets is left out; redis-server is first.
    let procs = f.processes.get().unwrap();
    let names: Vec<&str> = procs.iter().map(|p| p.comm.as_str()).collect();
    assert_eq!(names, ["redis-server", "redis-benchmark"]);
    assert_eq!(procs[0].sockets, 3, "the unix socket [900] is not inet");
    assert_eq!(procs[0].last_cpu, Some(0));
    assert_eq!(procs[0].allowed.as_ref().unwrap().to_list(), "0");
    assert_eq!(procs[0].cpu_ticks, 600_000);
    let q = f.qdiscs.get().unwrap();
    assert!(q
        .iter()
        .any(|q| q.kind == "pfifo_fast" && q.tx_queue == Some(0) && q.backlog == Some(1_229_368)));
    let avail = f.available_qdiscs.get().unwrap();
    assert!(avail.iter().any(|k| k == "fq_codel") && avail.iter().any(|k| k == "fq"));
    assert_eq!(f.bql.len(), 2);
    assert_eq!(f.bql[0].limit, Some(0));
    let ct = f.conntrack.get().unwrap();
    assert_eq!((ct.count, ct.max), (65_000, 65_536));
    assert_eq!(ct.stat.as_ref().unwrap().total("drop"), Some(0x80));
    let m = f.tcp_memory.get().unwrap();
    assert_eq!(m.tcp_mem, Some([1_409_352, 1_879_136, 2_818_704]));
    assert_eq!(m.sockstat.get("TCP", "mem"), Some(1_900_000));
    assert_eq!(m.max_orphans, Some(65_536));
    let s = f.tcp_sockets.get().unwrap();
    assert_eq!(s.iter().map(|s| s.rtt_us).max(), Some(80_000));
    assert_eq!(f.platform.cloud(), Some(Cloud::Aws));
    assert!(f.platform.is_xen());
    // Boot files: sysctl.d before /etc/sysctl.conf, every assignment kept.
    let b = &f.boot;
    let rmem = b.sysctl_at_boot("net.core.rmem_max").unwrap();
    assert_eq!(
        (rmem.value.as_str(), rmem.file.as_str(), rmem.line),
        ("212992", "/etc/sysctl.d/99-network.conf", 2)
    );
    assert_eq!(b.sysctl.last().unwrap().file, "/etc/sysctl.conf");
    assert_eq!(
        b.sysctl.first().unwrap().file,
        "/usr/lib/sysctl.d/00-system.conf"
    );
    assert_eq!(b.modprobe[0].module, "ixgbevf");
    assert_eq!(
        b.modprobe[0].params,
        [("InterruptThrottleRate".to_string(), "1".to_string())]
    );
    assert_eq!(b.udev[0].knobs, ["rps_cpus"]);
    let tuned = b.tuned.as_ref().unwrap();
    assert_eq!(tuned.name, "network-throughput");
    // The included profile's settings come first, so the includer's win.
    let keys: Vec<&str> = tuned.sysctl.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "kernel.sched_min_granularity_ns",
            "net.core.rmem_max",
            "net.ipv4.tcp_rmem",
            "net.ipv4.tcp_wmem"
        ]
    );
    assert_eq!(tuned.sysctl[2].value, "\"4096 87380 16777216\"");
    assert!(tuned
        .cpu
        .iter()
        .any(|c| c.key == "governor" && c.value == "performance"));
    assert!(b.unreadable.is_empty(), "{:?}", b.unreadable);
}

#[test]
fn two_socket_tuned_overlay_reads() {
    let t = root_with("two-socket-16q", Some("two-socket-16q-tuned"));
    let f = facts(&t.path().join("root"));
    let p = f.power.get().unwrap();
    assert!(p.governors.values().all(|g| g == "performance"));
    assert!(p.deep_states_allowed(5).is_empty());
    assert_eq!(f.processes.get().unwrap()[0].comm, "nginx");
    assert_eq!(f.bql.len(), 16);
    assert_eq!(f.platform.cloud(), None);
    assert!(
        f.qdiscs
            .get()
            .unwrap()
            .iter()
            .filter(|q| q.kind == "fq_codel")
            .count()
            == 16
    );
}

#[test]
fn bare_fixtures_name_each_missing_file() {
    let f = facts(&fixtures().join("c4-8xlarge"));
    let why = |r: Result<(), model::doctor_facts::MissingFact>| r.unwrap_err().to_string();
    assert!(why(f.power.get().map(|_| ()))
        .starts_with("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor: not found"));
    assert!(why(f.conntrack.get().map(|_| ())).starts_with(
        "/proc/sys/net/netfilter/nf_conntrack_count: not found (nf_conntrack is not loaded"
    ));
    assert_eq!(
        why(f.tcp_memory.get().map(|_| ())),
        "/proc/net/sockstat: not found"
    );
    assert_eq!(
        why(f.processes.get().map(|_| ())),
        "/proc/net/tcp: not found"
    );
    assert_eq!(
        why(f.qdiscs.get().map(|_| ())),
        "netlink/qdisc.json: not found"
    );
    assert_eq!(
        why(f.tcp_sockets.get().map(|_| ())),
        "netlink/inet_diag.json: not found"
    );
    assert!(why(f.available_qdiscs.get().map(|_| ()))
        .starts_with("/lib/modules/4.4.11-23.53.amzn1.x86_64/modules.builtin"));
    assert!(f.boot.sysctl.is_empty() && f.boot.tuned.is_none());
}

#[test]
fn corrupt_files_are_missing_with_the_parse_error() {
    let t = root_with("c4-8xlarge", Some("c4-8xlarge-busy"));
    let r = t.path().join("root");
    std::fs::write(r.join("proc/net/sockstat"), "TCP: inuse\n").unwrap();
    std::fs::write(r.join("proc/sys/net/netfilter/nf_conntrack_max"), "lots\n").unwrap();
    std::fs::write(r.join("netlink/qdisc.json"), "[{\"kind\": 3}]").unwrap();
    std::fs::write(
        r.join("etc/sysctl.d/99-network.conf"),
        [0xffu8, 0xfe, b'\n'],
    )
    .unwrap();
    std::fs::write(
        r.join("usr/lib/tuned/network-throughput/tuned.conf"),
        "sysctl without section=1\n",
    )
    .unwrap();
    // A FIFO where a process's stat should be: skipped, never blocked on.
    std::fs::remove_file(r.join("proc/2301/stat")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(r.join("proc/2301/stat"))
        .status()
        .unwrap()
        .success());
    let f = facts(&r);
    let e = f.tcp_memory.get().unwrap_err();
    assert_eq!(e.path, "/proc/net/sockstat", "{e}");
    assert!(
        e.to_string().starts_with("/proc/net/sockstat: line 1"),
        "{e}"
    );
    let e = f.conntrack.get().unwrap_err().to_string();
    assert!(e.contains("nf_conntrack_max") && e.contains("lots"), "{e}");
    assert!(f
        .qdiscs
        .get()
        .unwrap_err()
        .to_string()
        .starts_with("netlink/qdisc.json: not valid JSON"));
    assert!(f
        .boot
        .unreadable
        .iter()
        .any(|(p, _)| p == "/usr/lib/tuned/network-throughput/tuned.conf"));
    let procs = f.processes.get().unwrap();
    assert!(procs.iter().all(|p| p.pid != 2301));
}

#[test]
fn capture_of_an_overlaid_fixture_replays_the_same_facts() {
    let t = root_with("c4-8xlarge", Some("c4-8xlarge-busy"));
    let src = Root::new(t.path().join("root"));
    let out = t.path().join("capture");
    capture_from(&src, &out, &FixtureEthtool::new(&src)).unwrap();
    let a = facts(&t.path().join("root"));
    let b = facts(&out);
    assert_eq!(a.processes, b.processes);
    assert_eq!(a.power, b.power);
    assert_eq!(a.conntrack, b.conntrack);
    assert_eq!(a.tcp_memory, b.tcp_memory);
    assert_eq!(a.qdiscs, b.qdiscs);
    assert_eq!(a.tcp_sockets, b.tcp_sockets);
    assert_eq!(a.bql, b.bql);
    assert_eq!(a.boot, b.boot);
    assert_eq!(a.platform, b.platform);
    assert_eq!(a.available_qdiscs, b.available_qdiscs);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Any bytes in any of the files the readers parse: no panic, and a part
    /// either reads or is missing with its file named.
    #[test]
    fn garbage_in_every_file_never_panics(
        texts in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), 14)
    ) {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let files = [
            "proc/net/sockstat", "proc/net/tcp", "proc/net/udp6", "proc/net/stat/nf_conntrack",
            "proc/sys/net/netfilter/nf_conntrack_count", "proc/sys/net/netfilter/nf_conntrack_max",
            "proc/sys/net/ipv4/tcp_mem", "proc/7/stat", "proc/7/status",
            "etc/sysctl.d/10-x.conf", "etc/modprobe.d/x.conf", "etc/udev/rules.d/x.rules",
            "usr/lib/tuned/p/tuned.conf", "netlink/qdisc.json",
        ];
        for (f, b) in files.iter().zip(&texts) {
            let p = r.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b).unwrap();
        }
        std::fs::create_dir_all(r.join("proc/7/fd")).unwrap();
        std::os::unix::fs::symlink("socket:[1]", r.join("proc/7/fd/3")).unwrap();
        std::fs::create_dir_all(r.join("etc/tuned")).unwrap();
        std::fs::write(r.join("etc/tuned/active_profile"), "p\n").unwrap();
        let f = facts(r);
        for e in [f.conntrack.get().err(), f.tcp_memory.get().err(), f.qdiscs.get().err()].into_iter().flatten() {
            proptest::prop_assert!(e.to_string().contains('/'), "{}", e);
        }
    }
}
