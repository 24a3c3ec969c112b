//! Shared by the guest tests (docs/guests.md): QEMU guests with real NIC
//! drivers, booted from Debian's kernel and a busybox initramfs carrying
//! this build's nettune, reached through the fleet's guest transport.
#![allow(dead_code, clippy::unwrap_used)]

pub mod channels;
pub mod profiles;
pub mod reload;

use fleet::client::Agent;
use fleet::proto::Request;
use fleet::transport::GuestSocket;
use guest::initramfs::{Contents, SystemLdd, BUSYBOX};
use guest::kernel::Kernel;
use guest::run::find_qemu;
use guest::{Accel, BootOptions, Guest, GuestName, Machine, Netdev, Nic, NicModel};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A safety deadline for a boot (QEMU is killed at it), not a measure:
/// the guests boot in about 15 s here (bench/RESULTS.md, issue 37).
pub const BOOT_DEADLINE: Duration = Duration::from_secs(240);
/// The same for the agent's handshake and each request.
pub const AGENT_DEADLINE: Duration = Duration::from_secs(120);
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(60);

pub const NETTUNE: &str = env!("CARGO_BIN_EXE_nettune");

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// QEMU and the kernel, or the reason this machine has none (a failure in CI).
pub fn machine_or_skip() -> Option<(PathBuf, Kernel)> {
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
pub fn table(v: &Value) -> String {
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

pub fn golden(device: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/guest_goldens")
        .join(format!("{device}.txt"))
}

pub fn fixture(device: &str) -> PathBuf {
    repo()
        .join("tests/fixtures")
        .join(format!("guest-{device}"))
}

pub fn check_golden(device: &str, got: &str) {
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
pub fn run(args: &[&OsStr]) -> std::process::Output {
    Command::new(NETTUNE).args(args).output().unwrap()
}

/// The output of `nettune ARGS`, which must succeed.
pub fn nettune(args: &[&OsStr]) -> Vec<u8> {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nettune {args:?}: {err}");
    out.stdout
}

/// `inspect --json` of a capture (the CLI reading the tree, as a user would).
pub fn inspect_root(root: &Path) -> Value {
    let args = ["inspect", "--json", "--root"].map(OsStr::new);
    let [a, b, c] = args;
    serde_json::from_slice(&nettune(&[a, b, c, root.as_os_str()])).unwrap()
}

pub fn boot(qemu: &Path, kernel: &Kernel, model: NicModel, node1: bool, dir: &Path) -> Guest {
    let nic = Nic {
        model,
        netdev: Netdev::UserRestricted,
        node1,
    };
    boot_nics(qemu, kernel, model.device(), vec![nic], true, dir)
}

/// A guest named `name` with `nics` (their drivers loaded), its run
/// directory `dir`; with `capture`, `nettune capture` runs at boot.
pub fn boot_nics(
    qemu: &Path,
    kernel: &Kernel,
    name: &str,
    nics: Vec<Nic>,
    capture: bool,
    dir: &Path,
) -> Guest {
    boot_nics_with(
        qemu,
        kernel,
        name,
        nics,
        capture,
        dir,
        &BootOptions::default(),
    )
}

/// [`boot_nics`], QEMU started as `opts` says (in a namespace, with
/// words for `/init`'s environment).
pub fn boot_nics_with(
    qemu: &Path,
    kernel: &Kernel,
    name: &str,
    nics: Vec<Nic>,
    capture: bool,
    dir: &Path,
    opts: &BootOptions,
) -> Guest {
    let initrd = dir.join("initrd.cpio");
    let mut drivers: Vec<String> = nics.iter().map(|n| n.model.driver().to_string()).collect();
    drivers.sort();
    drivers.dedup();
    Contents {
        busybox: BUSYBOX.into(),
        nettune: NETTUNE.into(),
        ethtool: "/usr/sbin/ethtool".into(),
        kernel: kernel.clone(),
        drivers,
    }
    .write(&SystemLdd, &initrd)
    .unwrap();
    let m = Machine {
        name: GuestName::new(name).unwrap(),
        kernel: kernel.vmlinuz(),
        initrd,
        run_dir: dir.to_path_buf(),
        accel: Accel::from_env(),
        mem_mib: 512,
        nics,
        capture,
    };
    Guest::boot_with(qemu, m, BOOT_DEADLINE, opts).unwrap_or_else(|e| panic!("{e}"))
}

/// The guest's agent, connected (the error quotes the guest's console).
pub fn connect(g: &Guest) -> Agent {
    let t = GuestSocket {
        socket: g.agent_socket(),
    };
    Agent::connect(&t, env!("CARGO_PKG_VERSION"), AGENT_DEADLINE)
        .unwrap_or_else(|e| panic!("{e}\n{}", g.tail()))
}

/// `inspect` of the live guest.
pub fn inspect(agent: &mut Agent) -> Value {
    let req = Request::Inspect {
        root: None,
        iface: vec![],
    };
    ask(agent, &req, "inspect")
}

/// The plan `profile` makes in the guest.
pub fn plan(agent: &mut Agent, profile: &str) -> Value {
    plan_on(agent, profile, None)
}

/// The plan `profile` makes in the guest for the CPUs `cpus` (`--cpus`).
pub fn plan_on(agent: &mut Agent, profile: &str, cpus: Option<&str>) -> Value {
    let req = Request::Plan {
        profile: profile.into(),
        root: None,
        iface: vec![],
        cpus: cpus.map(str::to_string),
        exclude_cpus: None,
        bdp: None,
    };
    ask(agent, &req, &format!("plan {profile}"))
}

/// Roll the last generation back.
pub fn rollback(agent: &mut Agent, what: &str) -> Value {
    let req = Request::Rollback {
        root: None,
        state_dir: None,
        id: None,
        force: false,
    };
    ask(agent, &req, &format!("rollback {what}"))
}

/// `verify`: no knob drifted from the generation in force.
pub fn verify_no_drift(agent: &mut Agent, what: &str) {
    let req = Request::Verify {
        root: None,
        state_dir: None,
    };
    let v = ask(agent, &req, &format!("verify {what}"));
    assert!(fleet::ops::drifted(&v).is_empty(), "{what}: {v:#}");
}

pub fn qemu_version(qemu: &Path) -> String {
    let out = Command::new(qemu).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().unwrap_or("").trim().to_string()
}

pub fn write_fixture(
    device: &str,
    model: NicModel,
    capture: &Path,
    qemu: &str,
    kernel: &Kernel,
    node1: bool,
    netdev: &str,
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
            "Captured by `nettune capture` inside a QEMU guest (the guest tests of crates/nettune/tests, docs/guests.md): \
             QEMU device {device} ({qemu}, q35, TCG, 2 vCPUs on 2 NUMA nodes, {place}, {netdev}), the Linux driver {} of Debian's kernel {} (linux-image-{} unpacked, busybox \
             initramfs), interface up and idle; an emulated device, not the hardware. Counts are the boot's.\n",
            model.driver(),
            kernel.release,
            kernel.release,
        ),
    )
    .unwrap();
}

/// What a plan can change, from `inspect --json`: the interfaces without
/// their counters (kernel and driver), the IRQs without theirs, and the sysctls.
pub fn knobs(v: &Value) -> Value {
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
        // The effective CPU is where the IRQ last fired, not a knob: a
        // move the kernel could not make at once stays pending until the
        // IRQ next fires (kernel/irq/migration.c), so an idle queue's IRQ
        // may still sit where the apply had put it after rollback has
        // written smp_affinity back.
        if let Some(o) = q.as_object_mut() {
            o.remove("per_cpu");
            o.remove("effective_affinity");
        }
    }
    serde_json::json!({"interfaces": ifaces, "irqs": irqs, "sysctls": v["sysctls"]})
}

/// `path = value` leaves of a JSON value.
pub fn leaves(v: &Value, path: &str, out: &mut Vec<String>) {
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
pub fn differences(a: &Value, b: &Value) -> Vec<String> {
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
pub fn preview(agent: &mut Agent, plan: &Value) -> Vec<(String, String, Value, bool)> {
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
pub fn apply(plan: &Value, dry_run: bool) -> Request {
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

pub fn ask(agent: &mut Agent, req: &Request, what: &str) -> Value {
    let (v, code) = agent
        .json(req, AGENT_DEADLINE)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(code, 0, "{what}: exit {code}: {v:#}");
    v
}

/// The guest's `skb:kfree_skb` format as a fixture for the drops parser
/// (`tests/fixtures/kfree_skb-format-MAJOR.MINOR/format` with its LABEL).
pub fn write_kfree_skb_format(format: &Path, qemu: &str, kernel: &Kernel) {
    let series: Vec<&str> = kernel.release.split('.').take(2).collect();
    let dst = repo()
        .join("tests/fixtures")
        .join(format!("kfree_skb-format-{}", series.join(".")));
    std::fs::create_dir_all(&dst).unwrap();
    std::fs::copy(format, dst.join("format")).unwrap();
    std::fs::write(
        dst.join("LABEL"),
        format!(
            "/sys/kernel/tracing/events/skb/kfree_skb/format of Debian's kernel {} \
             (linux-image-{} unpacked, tracefs mounted by the busybox initramfs's /init), read in a \
             QEMU guest ({qemu}, q35, TCG) by crates/nettune/tests/guest_drivers.rs (docs/guests.md).\n",
            kernel.release, kernel.release,
        ),
    )
    .unwrap();
}

/// A network namespace made for one test (`ip netns add`), deleted when
/// dropped; its name has this test binary's prefix and process id.
pub struct Netns(pub String);

impl Netns {
    /// `nthc-WHAT-PID`, or `None` with the reason said where namespaces
    /// cannot be made (not root; a failure under `CI=true`).
    pub fn new(what: &str) -> Option<Netns> {
        let name = format!("nthc-{what}-{}", std::process::id());
        let out = Command::new("ip").args(["netns", "add", &name]).output();
        match out {
            Ok(o) if o.status.success() => Some(Netns(name)),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Err(e) => e.to_string(),
                };
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("ip netns add {name}: {why}");
                }
                eprintln!("skipped: ip netns add {name}: {why}");
                None
            }
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// The guest's boot-time capture, unpacked into `dir` (`dir/capture`, and
/// `dir/tracing/kfree_skb-format`): the path of the capture.
pub fn extract_capture(g: &Guest, dir: &Path) -> PathBuf {
    let tar = g.capture_tar(AGENT_DEADLINE).unwrap();
    let st = Command::new("tar")
        .arg("-C")
        .arg(dir)
        .arg("-xf")
        .arg(&tar)
        .status()
        .unwrap();
    assert!(st.success(), "tar -xf {}", tar.display());
    dir.join("capture")
}
