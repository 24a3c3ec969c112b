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

use fleet::client::Agent;
use fleet::proto::Request;
use fleet::transport::GuestSocket;
use guest::initramfs::{Contents, SystemLdd, BUSYBOX};
use guest::kernel::Kernel;
use guest::run::{find_qemu, Shutdown};
use guest::{Accel, Guest, GuestName, Machine, Netdev, Nic, NicModel};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A safety deadline for a boot (QEMU is killed at it), not a measure:
/// the guests boot in about 15 s here (bench/RESULTS.md, issue 37).
const BOOT_DEADLINE: Duration = Duration::from_secs(240);
/// The same for the agent's handshake and each request.
const AGENT_DEADLINE: Duration = Duration::from_secs(120);
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(60);

const NETTUNE: &str = env!("CARGO_BIN_EXE_nettune");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// QEMU and the kernel, or the reason this machine has none (a failure in CI).
fn machine_or_skip() -> Option<(PathBuf, Kernel)> {
    let got = find_qemu().and_then(|q| Kernel::from_env().map(|k| (q, k)));
    match got {
        Ok(x) => Some(x),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("guest tests cannot run in CI: {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// The queue → IRQ → affinity table of every interface but `lo`, from
/// `inspect --json`: one line per interface, then one per IRQ.
fn table(v: &Value) -> String {
    let mut out = String::new();
    let s = |v: &Value, k: &str| match &v[k] {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        x => x.to_string(),
    };
    for i in v["interfaces"].as_array().into_iter().flatten() {
        let name = s(i, "name");
        if name == "lo" {
            continue;
        }
        out.push_str(&format!(
            "{name} driver {} numa_node {} local_cpus {} rx_queues {} tx_queues {} irq_mapping {}\n",
            s(i, "driver"),
            s(i, "numa_node"),
            s(i, "local_cpus"),
            i["rx_queues"].as_array().map_or(0, Vec::len),
            i["tx_queues"].as_array().map_or(0, Vec::len),
            s(i, "irq_mapping"),
        ));
        for q in v["irqs"].as_array().into_iter().flatten() {
            if q["interface"].as_str() != Some(name.as_str()) {
                continue;
            }
            let queue = match (&q["queue"]["kind"], &q["queue"]["index"]) {
                (Value::String(k), Value::Number(n)) => format!("{k} {n}"),
                _ => "none".to_string(),
            };
            out.push_str(&format!(
                "  irq {} {} queue {queue} affinity {} effective {} node {}\n",
                s(q, "number"),
                s(q, "name"),
                s(q, "smp_affinity"),
                s(q, "effective_affinity"),
                s(q, "node"),
            ));
        }
    }
    out
}

fn golden(device: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/guest_goldens")
        .join(format!("{device}.txt"))
}

fn fixture(device: &str) -> PathBuf {
    repo()
        .join("tests/fixtures")
        .join(format!("guest-{device}"))
}

fn check_golden(device: &str, got: &str) {
    let path = golden(device);
    if std::env::var("NETTUNE_GUEST_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (NETTUNE_GUEST_BLESS=1 writes it)", path.display()));
    assert_eq!(
        got,
        want,
        "{device}: the table differs from {}",
        path.display()
    );
}

/// `nettune ARGS`, run to its end.
fn run(args: &[&OsStr]) -> std::process::Output {
    Command::new(NETTUNE).args(args).output().unwrap()
}

/// The output of `nettune ARGS`, which must succeed.
fn nettune(args: &[&OsStr]) -> Vec<u8> {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nettune {args:?}: {err}");
    out.stdout
}

/// `inspect --json` of a capture (the CLI reading the tree, as a user would).
fn inspect_root(root: &Path) -> Value {
    let args = ["inspect", "--json", "--root"].map(OsStr::new);
    let [a, b, c] = args;
    serde_json::from_slice(&nettune(&[a, b, c, root.as_os_str()])).unwrap()
}

fn boot(qemu: &Path, kernel: &Kernel, model: NicModel, node1: bool, dir: &Path) -> Guest {
    let initrd = dir.join("initrd.cpio");
    Contents {
        busybox: BUSYBOX.into(),
        nettune: NETTUNE.into(),
        ethtool: "/usr/sbin/ethtool".into(),
        kernel: kernel.clone(),
        drivers: vec![model.driver().to_string()],
    }
    .write(&SystemLdd, &initrd)
    .unwrap();
    let m = Machine {
        name: GuestName::new(model.device()).unwrap(),
        kernel: kernel.vmlinuz(),
        initrd,
        run_dir: dir.to_path_buf(),
        accel: Accel::from_env(),
        mem_mib: 512,
        nics: vec![Nic {
            model,
            netdev: Netdev::UserRestricted,
            node1,
        }],
        capture: true,
    };
    Guest::boot(qemu, m, BOOT_DEADLINE).unwrap_or_else(|e| panic!("{e}"))
}

fn qemu_version(qemu: &Path) -> String {
    let out = Command::new(qemu).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().unwrap_or("").trim().to_string()
}

fn write_fixture(
    device: &str,
    model: NicModel,
    capture: &Path,
    qemu: &str,
    kernel: &Kernel,
    node1: bool,
) {
    let dst = fixture(device);
    let _ = std::fs::remove_dir_all(&dst);
    let st = Command::new("cp")
        .arg("-a")
        .arg(capture)
        .arg(&dst)
        .status()
        .unwrap();
    assert!(st.success());
    let place = if node1 {
        "behind a pxb-pcie expander bridge with numa_node=1"
    } else {
        "on the q35 root bus (numa_node -1)"
    };
    std::fs::write(
        dst.join("LABEL"),
        format!(
            "Captured by `nettune capture` inside a QEMU guest (tests/guest_drivers.rs, docs/guests.md): \
             QEMU device {device} ({qemu}, q35, TCG, 2 vCPUs on 2 NUMA nodes, {place}, user-mode netdev \
             with restrict=on), the Linux driver {} of Debian's kernel {} (linux-image-{} unpacked, busybox \
             initramfs), interface up and idle; an emulated device, not the hardware. Counts are the boot's.\n",
            model.driver(),
            kernel.release,
            kernel.release,
        ),
    )
    .unwrap();
}

fn driver_in_a_guest(model: NicModel, node1: bool) {
    let Some((qemu, kernel)) = machine_or_skip() else {
        return;
    };
    let device = model.device();
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let g = boot(&qemu, &kernel, model, node1, dir.path());
    let booted = t0.elapsed();
    let t = GuestSocket {
        socket: g.agent_socket(),
    };
    let mut agent = Agent::connect(&t, env!("CARGO_PKG_VERSION"), AGENT_DEADLINE)
        .unwrap_or_else(|e| panic!("{e}\n{}", g.tail()));
    let ready = t0.elapsed();
    let (v, code) = agent
        .json(
            &Request::Inspect {
                root: None,
                iface: vec![],
            },
            AGENT_DEADLINE,
        )
        .unwrap();
    assert_eq!(code, 0);
    let live = table(&v);
    assert!(
        live.contains(&format!("driver {}", model.driver())),
        "{live}"
    );
    check_golden(device, &live);

    let tar = g.capture_tar(AGENT_DEADLINE).unwrap();
    let st = Command::new("tar")
        .arg("-C")
        .arg(dir.path())
        .arg("-xf")
        .arg(&tar)
        .status()
        .unwrap();
    assert!(st.success());
    let captured = dir.path().join("capture");
    assert_eq!(
        table(&inspect_root(&captured)),
        live,
        "{device}: the capture reads back otherwise"
    );
    if std::env::var("NETTUNE_GUEST_FIXTURES").as_deref() == Ok("1") {
        write_fixture(
            device,
            model,
            &captured,
            &qemu_version(&qemu),
            &kernel,
            node1,
        );
    }
    drop(agent);
    let t1 = Instant::now();
    assert_eq!(g.shutdown(SHUTDOWN_DEADLINE), Shutdown::Clean);
    eprintln!(
        "{device}: ready (console) {:.1} s, agent answered {:.1} s, shutdown {:.1} s",
        booted.as_secs_f64(),
        ready.as_secs_f64(),
        t1.elapsed().as_secs_f64()
    );
}

#[test]
fn e1000_82545em_in_a_guest() {
    driver_in_a_guest(NicModel::E1000_82545em, false);
}

#[test]
fn e1000e_in_a_guest_on_node_1() {
    driver_in_a_guest(NicModel::E1000e, true);
}

#[test]
fn vmxnet3_in_a_guest() {
    driver_in_a_guest(NicModel::Vmxnet3, false);
}

/// The committed captures give the golden tables with no QEMU at all.
#[test]
fn the_guest_fixtures_read_back_as_the_goldens() {
    for model in [NicModel::E1000_82545em, NicModel::E1000e, NicModel::Vmxnet3] {
        let device = model.device();
        let got = table(&inspect_root(&fixture(device)));
        let want = std::fs::read_to_string(golden(device)).unwrap();
        assert_eq!(got, want, "{device}");
    }
}

/// What a plan can change, from `inspect --json`: the interfaces without
/// their counters (kernel and driver), the IRQs without theirs, and the sysctls.
fn knobs(v: &Value) -> Value {
    let mut ifaces = v["interfaces"].clone();
    for i in ifaces.as_array_mut().into_iter().flatten() {
        if let Some(o) = i.as_object_mut() {
            o.remove("stats");
        }
        // The driver's counters (ethtool -S) move with the guest's own
        // traffic (IPv6 router solicitations on the restricted netdev).
        if let Some(o) = i["ethtool"].as_object_mut() {
            o.remove("stats");
        }
    }
    let mut irqs = v["irqs"].clone();
    for q in irqs.as_array_mut().into_iter().flatten() {
        if let Some(o) = q.as_object_mut() {
            o.remove("per_cpu");
        }
    }
    serde_json::json!({"interfaces": ifaces, "irqs": irqs, "sysctls": v["sysctls"]})
}

/// `path = value` leaves of a JSON value.
fn leaves(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| leaves(x, &format!("{path}.{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| leaves(x, &format!("{path}[{i}]"), out)),
        x => out.push(format!("{path} = {x}")),
    }
}

/// The leaves of `a` and `b` that are not in both, each marked with its side.
fn differences(a: &Value, b: &Value) -> Vec<String> {
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    leaves(a, "", &mut la);
    leaves(b, "", &mut lb);
    let only = |x: &[String], y: &[String], mark: &str| -> Vec<String> {
        x.iter()
            .filter(|l| !y.contains(l))
            .map(|l| format!("{mark} {l}"))
            .collect()
    };
    let mut d = only(&la, &lb, "before:");
    d.extend(only(&lb, &la, "after:"));
    d
}

/// The agent's dry run of `plan`: per change `(knob, target, now, unchanged)`,
/// each value read back by the knob itself (module parameters, pm_qos files
/// and all, beyond what inspect shows).
fn preview(agent: &mut Agent, plan: &Value) -> Vec<(String, String, Value, bool)> {
    let v = ask(agent, &apply(plan, true), "apply --dry-run");
    v["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("?").to_string();
            (
                s("knob"),
                s("target"),
                c["now"].clone(),
                c["unchanged"] == true,
            )
        })
        .collect()
}

/// `apply` of `plan` on the live guest, through its journal (or only read
/// with `dry_run`).
fn apply(plan: &Value, dry_run: bool) -> Request {
    Request::Apply {
        dry_run,
        plan: plan.clone(),
        confirm_within: None,
        root: None,
        state_dir: None,
        force: false,
        replan: false,
    }
}

fn ask(agent: &mut Agent, req: &Request, what: &str) -> Value {
    let (v, code) = agent
        .json(req, AGENT_DEADLINE)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(code, 0, "{what}: exit {code}: {v:#}");
    v
}

/// Each built-in profile's plan, applied by the real e1000e driver's guest
/// through the agent, verifies without drift and rolls back to every knob
/// as it was (read back by inspect, counters aside).
#[test]
fn every_profile_applies_verifies_and_rolls_back_on_e1000e() {
    let Some((qemu, kernel)) = machine_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let g = boot(&qemu, &kernel, NicModel::E1000e, true, dir.path());
    let t = GuestSocket {
        socket: g.agent_socket(),
    };
    let mut agent = Agent::connect(&t, env!("CARGO_PKG_VERSION"), AGENT_DEADLINE)
        .unwrap_or_else(|e| panic!("{e}\n{}", g.tail()));
    let inspect = Request::Inspect {
        root: None,
        iface: vec![],
    };
    for profile in ["latency", "throughput", "balanced"] {
        let before = knobs(&ask(&mut agent, &inspect, "inspect"));
        let plan = ask(
            &mut agent,
            &Request::Plan {
                profile: profile.into(),
                root: None,
                iface: vec![],
                cpus: None,
                exclude_cpus: None,
                bdp: None,
            },
            profile,
        );
        let was = preview(&mut agent, &plan);
        assert!(
            was.iter().all(|c| !c.3),
            "{profile}: a change the host already holds: {was:?}"
        );
        let applied = ask(
            &mut agent,
            &apply(&plan, false),
            &format!("apply {profile}"),
        );
        let verify = Request::Verify {
            root: None,
            state_dir: None,
        };
        let v = ask(&mut agent, &verify, &format!("verify {profile}"));
        assert!(fleet::ops::drifted(&v).is_empty(), "{profile}: {v:#}");
        let changed = knobs(&ask(&mut agent, &inspect, "inspect"));
        // Every value the plan wrote reads back as written.
        let now = preview(&mut agent, &plan);
        assert!(
            now.iter().all(|c| c.3),
            "{profile}: not held after apply: {now:?}"
        );
        ask(
            &mut agent,
            &Request::Rollback {
                root: None,
                state_dir: None,
                id: None,
                force: false,
            },
            &format!("rollback {profile}"),
        );
        let after = knobs(&ask(&mut agent, &inspect, "inspect"));
        let back = preview(&mut agent, &plan);
        assert_eq!(
            back, was,
            "{profile}: a knob reads otherwise after rollback"
        );
        let differ = differences(&before, &after);
        assert!(
            differ.is_empty(),
            "{profile}: after rollback {differ:?}; applied {applied:#}"
        );
        assert_ne!(
            changed, before,
            "{profile}: the apply changed nothing inspect reads"
        );
        let targets: Vec<String> = plan["changes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["target"].to_string())
            .collect();
        eprintln!("{profile}: applied and rolled back {targets:?}");
    }
    drop(agent);
    // The CLI's fleet reaches the same guest from an inventory, like any host.
    let inv = dir.path().join("guests.toml");
    let sock = g.agent_socket();
    std::fs::write(
        &inv,
        format!(
            "[[host]]\nname = \"e1000e\"\ntransport = \"guest\"\nsocket = \"{}\"\n",
            sock.display()
        ),
    )
    .unwrap();
    let [a, b, c, d] = ["fleet", "inspect", "--json", "--inventory"].map(OsStr::new);
    let out = nettune(&[a, b, c, d, inv.as_os_str()]);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\"e1000e\""), "{text}");
    assert!(text.contains("eth0-rx-0"), "{text}");
    assert_eq!(g.shutdown(SHUTDOWN_DEADLINE), Shutdown::Clean);
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
