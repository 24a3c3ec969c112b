//! CPU_BACKLOG, provoked in a QEMU guest (docs/drops.md, docs/guests.md):
//! `net.core.netdev_max_backlog` is one sysctl for a whole kernel, not a
//! network namespace's, and the tests never write this machine's own; a
//! guest's kernel is the test's to set.
//!
//! One guest (Debian's 6.1 kernel, 2 vCPUs) with a virtio-net NIC on a tap
//! that QEMU creates in a network namespace made for the test (`nt39b-*`).
//! Through the guest's agent the test applies a hand-written plan: eth0's
//! IRQs on CPU 0, RPS of rx-0 to CPU 1 (`rps_cpus` 2) and
//! `netdev_max_backlog` 0. python3 in the namespace floods the guest with
//! UDP through the tap. The guest's `/init` (test hook
//! `NETTUNE_TEST_CAPTURE_AFTER_RX`) runs `nettune capture --samples 4` on
//! CPU 0 once the flood has arrived; on this machine `nettune drops --root`
//! and `nettune doctor --root` read that capture back.
//!
//! Why drops are certain (net/core/dev.c, 6.1): with RPS, each packet the
//! NIC's NAPI poll on CPU 0 hands up (`netif_receive_skb_list_internal`,
//! in batches of up to `gro_normal_batch`) goes to
//! `enqueue_to_backlog(skb, 1)`, which queues it on CPU 1's
//! `input_pkt_queue` only while `qlen <= netdev_max_backlog`, else counts
//! `sd->dropped++` (softnet_stat's second column, in CPU 1's row) and frees
//! it with `kfree_skb_reason(skb, SKB_DROP_REASON_CPU_BACKLOG)`. With the
//! limit 0 the queue takes a packet only when it is empty. The first
//! packet into an idle backlog sets its NAPI_STATE_SCHED and puts CPU 1 on
//! CPU 0's `rps_ipi_list` (`napi_schedule_rps`); the IPI that lets CPU 1
//! poll its backlog is sent by `net_rps_action_and_irq_enable` only after
//! CPU 0's `net_rx_action` has finished all its polls. So in a poll that
//! hands up more than one packet while CPU 1's backlog is idle, the first
//! is queued and every later one finds `qlen` 1 > 0: a CPU_BACKLOG drop.
//! A flood from outside gives such polls (QEMU fills the rx ring faster
//! than the emulated CPU empties it).
//!
//! What is asserted is what that code guarantees: every softnet "dropped"
//! increment is followed, on the same CPU and in the same softirq, by one
//! CPU_BACKLOG hit of the tracepoint (the device is up, so the other
//! `goto drop`, a stopped device, is not taken; the guest has no other
//! traffic, and its NIC's interrupts go to CPU 0 only, which the test
//! checks in the capture's /proc/interrupts). The capture runs on CPU 0,
//! the CPU that drops: a task cannot run in the middle of that CPU's
//! softirq, so when it reads softnet_stat every drop it sees there has hit
//! the tracepoint too. The watcher opens before the first sample, and each
//! sample reads softnet_stat and then the drop counts: so the CPU_BACKLOG
//! count recorded since the watcher opened is at least softnet's "dropped"
//! delta from the first sample to the last (and that delta is more than
//! 0), and the replay's total (the last sample's counts minus the
//! first's) at least the delta from the second sample to the last. No
//! timing margin: the only bounds are deadlines.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod guest_common;

use fleet::client::Agent;
use guest::run::Shutdown;
use guest::{BootOptions, Netdev, Nic, NicModel};
use guest_common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// The namespace's end of the tap, and the guest's address (nothing in the
/// guest holds it: the packets only need the guest's MAC to be received).
const HOST_ADDR: &str = "10.39.0.1/24";
const GUEST_ADDR: &str = "10.39.0.2";
/// The capture starts once eth0 has received this many packets: only the
/// flood brings that many.
const CAPTURE_AFTER_RX: u32 = 1000;
/// The CPU of eth0's IRQs (and so of its NAPI poll), where the capture runs.
const IRQ_CPU: &str = "0";
/// RPS of rx-0: CPU 1 (the other one).
const RPS_MASK: &str = "2";

/// The flood's bursts: datagrams sent back to back, then a pause (s).
const BURST: u32 = 16;
const PAUSE_S: f64 = 0.02;

/// python3 sending UDP to the guest from the namespace: bursts of [`BURST`], for
/// at most `secs` seconds and `max` datagrams (killed sooner by the test).
fn flood_script(secs: u32, max: u64) -> String {
    format!(
        "import socket,time\n\
         s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
         end=time.monotonic()+{secs}\n\
         n=0\n\
         while time.monotonic()<end and n<{max}:\n  \
           for i in range({BURST}):\n    \
             try: s.sendto(b'x'*32,('{GUEST_ADDR}',9))\n    \
             except OSError: pass\n  \
           n+={BURST}\n  \
           time.sleep({PAUSE_S})\n"
    )
}

/// eth0's IRQs from `inspect --json`: `(number, queue kind)`.
fn eth0_irqs(v: &Value) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for q in v["irqs"].as_array().into_iter().flatten() {
        if q["interface"] == "eth0" {
            let kind = q["queue"]["kind"].as_str().unwrap_or("none");
            out.push((q["number"].as_u64().unwrap(), kind.to_string()));
        }
    }
    out
}

/// The plan: `base`'s header (host, fingerprint) with these changes only.
fn backlog_plan(mut base: Value, irqs: &[(u64, String)]) -> Value {
    let mut changes = Vec::new();
    for (irq, _) in irqs {
        changes.push(json!({
            "phase": "irq_affinity", "knob": "smp_affinity_list",
            "target": {"kind": "irq_affinity", "irq": irq, "iface": "eth0"},
            "before": null, "after": IRQ_CPU, "rule": "irq-affinity",
            "reason": "the NIC's NAPI poll on CPU 0 (test)",
            "source": "Documentation/core-api/irq/irq-affinity.rst"
        }));
    }
    changes.push(json!({
        "phase": "steering", "knob": "rps_cpus",
        "target": {"kind": "file", "path": "/sys/class/net/eth0/queues/rx-0/rps_cpus", "format": "mask"},
        "before": null, "after": RPS_MASK, "rule": "rps",
        "reason": "rx-0 steered to CPU 1, the other CPU (test)",
        "source": "Documentation/networking/scaling.rst (RPS)"
    }));
    changes.push(json!({
        "phase": "sysctls", "knob": "net.core.netdev_max_backlog",
        "target": {"kind": "file", "path": "/proc/sys/net/core/netdev_max_backlog", "format": "text"},
        "before": null, "after": "0", "rule": "backlog",
        "reason": "a backlog that holds one packet (test)",
        "source": "Documentation/admin-guide/sysctl/net.rst (netdev_max_backlog)"
    }));
    base["changes"] = Value::Array(changes);
    base["notes"] = json!([]);
    base
}

/// Whether every rx IRQ of eth0 is delivered to [`IRQ_CPU`] (its
/// effective affinity; on x86 a new affinity takes effect when the
/// interrupt next fires).
fn rx_irqs_on_irq_cpu(v: &Value) -> bool {
    let rx: Vec<&Value> = v["irqs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["interface"] == "eth0" && q["queue"]["kind"] == "rx")
        .collect();
    !rx.is_empty()
        && rx
            .iter()
            .all(|q| q["effective_affinity"].as_str() == Some(IRQ_CPU))
}

/// A few datagrams, so that eth0's rx IRQ fires and its new affinity takes.
fn prime(ns: &lab::Netns) {
    let script = format!(
        "import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\nfor i in range(3): s.sendto(b'p',('{GUEST_ADDR}',9))"
    );
    let st = ns
        .command("timeout")
        .args(["30", "python3", "-c", &script])
        .status()
        .unwrap();
    assert!(st.success(), "python3 in {}", ns.name());
}

/// Apply the plan and wait until the rx IRQ is delivered to [`IRQ_CPU`].
fn set_up(agent: &mut Agent, ns: &lab::Netns, g: &guest::Guest) -> Value {
    let before = inspect(agent);
    let irqs = eth0_irqs(&before);
    assert!(
        irqs.iter().any(|(_, k)| k == "rx"),
        "no rx IRQ of eth0: {irqs:?}"
    );
    let plan = backlog_plan(plan(agent, "latency"), &irqs);
    let report = ask(agent, &apply(&plan, false), "apply the backlog plan");
    for c in report["changes"].as_array().unwrap() {
        assert_eq!(c["outcome"]["status"], "applied", "{report:#}");
    }
    let mut now = inspect(agent);
    let mut primed = 0;
    while primed < 20 && !rx_irqs_on_irq_cpu(&now) {
        prime(ns);
        primed += 1;
        now = inspect(agent);
    }
    assert!(
        rx_irqs_on_irq_cpu(&now),
        "eth0's rx IRQ is not delivered to CPU {IRQ_CPU}: {}\n{}",
        table(&now),
        g.tail()
    );
    let sysctl = |v: &Value| v["sysctls"]["net.core.netdev_max_backlog"].clone();
    eprintln!(
        "netdev_max_backlog {} -> {}; rx IRQ on CPU {IRQ_CPU} after {primed} primer(s)",
        sysctl(&before),
        sysctl(&now)
    );
    before
}

/// `(sample directory, softnet_stat's "dropped" summed over CPUs)` of each
/// sample of the capture, in order.
fn softnet_dropped(capture: &Path) -> Vec<(String, u64)> {
    let index: Value =
        serde_json::from_slice(&std::fs::read(capture.join("samples/index.json")).unwrap())
            .unwrap();
    index["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let dir = s["dir"].as_str().unwrap().to_string();
            let text = std::fs::read_to_string(
                capture
                    .join("samples")
                    .join(&dir)
                    .join("proc/net/softnet_stat"),
            )
            .unwrap();
            let sum = text
                .lines()
                .map(|l| {
                    let col = l.split_whitespace().nth(1).unwrap();
                    u64::from_str_radix(col, 16).unwrap()
                })
                .sum();
            (dir, sum)
        })
        .collect()
}

/// `/proc/interrupts` counts of IRQ `irq` per CPU in a sample.
fn irq_counts(capture: &Path, dir: &str, irq: u64) -> Vec<u64> {
    let text =
        std::fs::read_to_string(capture.join("samples").join(dir).join("proc/interrupts")).unwrap();
    let head = format!("{irq}:");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&head))
        .unwrap_or_else(|| panic!("IRQ {irq} not in {dir}/proc/interrupts"));
    line.trim_start()[head.len()..]
        .split_whitespace()
        .map_while(|w| w.parse().ok())
        .collect()
}

fn reason(v: &Value, name: &str) -> u64 {
    v["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["name"] == name)
        .map_or(0, |r| r["count"].as_u64().unwrap())
}

/// The replay's totals line (`nettune drops --root CAPTURE --json`).
fn drops_totals(capture: &Path) -> Value {
    let out = nettune(&[
        "drops".as_ref(),
        "--json".as_ref(),
        "--root".as_ref(),
        capture.as_os_str(),
    ]);
    let text = String::from_utf8(out).unwrap();
    let last = text.lines().last().expect("no output");
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["kind"], "totals", "{text}");
    v
}

/// The human replay names it too.
fn drops_human_names(capture: &Path, what: &str) {
    let out = nettune(&["drops".as_ref(), "--root".as_ref(), capture.as_os_str()]);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(what), "{text}");
}

/// doctor's `drops-by-reason` over the capture's window.
fn doctor_finding(capture: &Path) -> String {
    let out = run(&[
        "doctor".as_ref(),
        "--json".as_ref(),
        "--root".as_ref(),
        capture.as_os_str(),
    ]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --root: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "drops-by-reason")
        .unwrap_or_else(|| panic!("no drops-by-reason: {r:#}"))
        .to_string()
}

/// A sample's recorded drop counts (`samples/DIR/drops.json`, cumulative
/// since the watcher opened, before the first sample).
fn recorded(capture: &Path, dir: &str) -> Value {
    let p = capture.join("samples").join(dir).join("drops.json");
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

/// What the capture shows, checked against what the kernel guarantees.
fn check_capture(capture: &Path, rx_irq: u64) {
    let softnet = softnet_dropped(capture);
    assert!(softnet.len() >= 3, "{softnet:?}");
    let (first_dir, first) = &softnet[0];
    let (_, second) = &softnet[1];
    let (last_dir, last) = softnet.last().unwrap();
    // The drops are made on the CPU the capture runs on only if the NIC's
    // interrupts went there: none to another CPU within the window.
    let a = irq_counts(capture, first_dir, rx_irq);
    let b = irq_counts(capture, last_dir, rx_irq);
    for (cpu, (x, y)) in a.iter().zip(&b).enumerate() {
        if cpu.to_string() != IRQ_CPU {
            assert_eq!(x, y, "IRQ {rx_irq} fired on CPU {cpu}: {a:?} -> {b:?}");
        }
    }
    // Since the watcher opened (before the first sample's softnet read) to
    // the last sample's counts (after its softnet read): every drop
    // softnet counted between the first and the last sample.
    let whole = recorded(capture, last_dir);
    assert_eq!(whole["counting"], "bpf", "every drop by reason: {whole}");
    let since_open = whole["by_reason"]["CPU_BACKLOG"].as_u64().unwrap_or(0);
    let softnet_all = last.checked_sub(*first).unwrap();
    // The replay's total: the first sample's counts (after its softnet
    // read, before the second's) to the last's.
    let totals = drops_totals(capture);
    let replayed = reason(&totals, "CPU_BACKLOG");
    let softnet_later = last.checked_sub(*second).unwrap();
    eprintln!(
        "softnet dropped by sample {softnet:?}; CPU_BACKLOG since the watcher opened {since_open} \
         (softnet +{softnet_all}), replayed {replayed} (softnet from sample 1 +{softnet_later})"
    );
    assert!(
        softnet_all > 0,
        "no backlog drop in the capture: {softnet:?}"
    );
    assert!(
        since_open >= softnet_all,
        "CPU_BACKLOG {since_open} < softnet's dropped delta {softnet_all}: {whole}"
    );
    assert_eq!(totals["reasons_exact"], true, "{totals}");
    assert!(replayed > 0, "nettune drops --root: {totals}");
    assert!(
        replayed >= softnet_later,
        "replayed CPU_BACKLOG {replayed} < softnet's dropped delta {softnet_later}: {totals}"
    );
    drops_human_names(capture, "CPU_BACKLOG");
    let finding = doctor_finding(capture);
    assert!(finding.contains("CPU_BACKLOG"), "{finding}");
    assert!(finding.contains("softnet-drops"), "{finding}");
    assert!(finding.contains("netdev_max_backlog"), "{finding}");
}

#[test]
fn a_tiny_netdev_max_backlog_with_rps_in_a_guest_is_cpu_backlog() {
    let t0 = Instant::now();
    let Some((qemu, kernel)) = machine_or_skip() else {
        return;
    };
    let test = "a_tiny_netdev_max_backlog_with_rps_in_a_guest_is_cpu_backlog";
    if !lab::require_root(test) || !lab::require_programs(test, &["python3"], "python3") {
        return;
    }
    let ns = lab::Netns::create("nt39b").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let nic = Nic {
        model: NicModel::VirtioNet,
        netdev: Netdev::Tap { queues: 1 },
        node1: false,
    };
    let opts = BootOptions {
        netns: Some(ns.name().to_string()),
        append: vec![
            format!("NETTUNE_TEST_CAPTURE_AFTER_RX={CAPTURE_AFTER_RX}"),
            format!("NETTUNE_TEST_CAPTURE_CPU={IRQ_CPU}"),
        ],
    };
    let g = boot_nics_with(
        &qemu,
        &kernel,
        "drops-backlog",
        vec![nic],
        true,
        dir.path(),
        &opts,
    );
    let booted = t0.elapsed();
    let tap = guest::machine::tap_name(0);
    ns.ip(&["link", "set", &tap, "up"]).unwrap();
    ns.ip(&["addr", "add", HOST_ADDR, "dev", &tap]).unwrap();
    let mac = g.machine().mac(0);
    ns.ip(&[
        "neigh",
        "replace",
        GUEST_ADDR,
        "lladdr",
        &mac,
        "dev",
        &tap,
        "nud",
        "permanent",
    ])
    .unwrap();

    let mut agent = connect(&g);
    let before = set_up(&mut agent, &ns, &g);
    let rx_irq = eth0_irqs(&before)
        .into_iter()
        .find(|(_, k)| k == "rx")
        .unwrap()
        .0;
    let set = t0.elapsed();
    let flood = ns
        .spawn(
            "timeout",
            &["300", "python3", "-c", &flood_script(300, 20_000_000)],
        )
        .unwrap();
    // The capture runs while the guest's CPU 0 is busy with the flood: the
    // boot's (longer) deadline for its tar, then unpacked.
    g.capture_tar(BOOT_DEADLINE)
        .unwrap_or_else(|e| panic!("{e}"));
    let capture = extract_capture(&g, dir.path());
    drop(flood);
    let flooded = t0.elapsed();
    check_capture(&capture, rx_irq);

    drop(agent);
    assert_eq!(g.shutdown(SHUTDOWN_DEADLINE), Shutdown::Clean);
    drop(ns);
    eprintln!(
        "wall: booted {:.1} s, set up {:.1} s, capture back {:.1} s, done {:.1} s",
        booted.as_secs_f64(),
        set.as_secs_f64(),
        flooded.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
}
