//! `nettune fleet` over ssh, end to end (docs/fleet.md, "Testing over ssh"):
//! a lab of network namespaces, one sshd per spoke with keys made for the
//! test ([`SshFleet`]), and the controller run inside the hub namespace with
//! an inventory of ssh hosts. The remote program is this build's binary (the
//! `nettune` label), ssh's `ControlPath` is in the test's temp directory
//! (`-S`), and every master connection is closed at the end. Hosts are
//! namespaces of one machine, so applies go into per-host fixture copies
//! (`root` / `state_dir` labels) or touch only what a namespace owns (its
//! veth's channels). Needs root and openssh-server: skipped otherwise
//! (failed under `CI=true`, which installs them).

#![allow(clippy::unwrap_used)]

mod fixture_copy;

use fixture_copy::{copy, tree, Copy};
use fleet::proto::{Request, PROTO_VERSION};
use lab::sshd::{require_sshd, SshFleet};
use lab::{Lab, LabSpec};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A lab (hub 0, spokes 1..=N), an sshd on every spoke, a temp directory
/// with the ssh master sockets (`cm/`); masters are closed on drop.
struct Rig {
    // Dropped in this order: the sshds (and their sessions), the lab, the files.
    fleet: SshFleet,
    lab: Lab,
    tmp: tempfile::TempDir,
}

impl Rig {
    fn new(spokes: u32, queues: u32) -> Rig {
        let hosts: Vec<usize> = (1..=spokes as usize).collect();
        Rig::with_sshd_on(spokes, queues, &hosts)
    }

    /// [`Rig::new`] with an sshd on `hosts` (lab indexes; 0 is the hub).
    fn with_sshd_on(spokes: u32, queues: u32, hosts: &[usize]) -> Rig {
        let lab = Lab::build(LabSpec {
            prefix: "ntfssh".into(),
            ..LabSpec::new(spokes + 1, queues)
        })
        .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("cm")).unwrap();
        let fleet = SshFleet::start(&lab, hosts).unwrap();
        Rig { fleet, lab, tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// TOML keys of spoke `i` as an ssh host: its address, the fleet's port,
    /// user and key, the generated `ssh_config` (known hosts, batch mode),
    /// `-S` for a ControlPath in the temp dir (`-S` wins over the
    /// transport's `-o ControlPath`), and `labels` (`nettune` = this binary
    /// unless `labels` names another).
    fn ssh_host(&self, i: usize, labels: &str) -> String {
        let labels = if labels.contains("nettune =") {
            labels.to_string()
        } else if labels.is_empty() {
            format!("nettune = \"{BIN}\"")
        } else {
            format!("nettune = \"{BIN}\", {labels}")
        };
        format!(
            "transport = \"ssh\"\naddress = \"{}\"\nport = {}\nuser = \"root\"\n\
             identity_file = \"{}\"\nssh_args = [\"-F\", \"{}\", \"-S\", \"{}/%C\"]\n\
             labels = {{ {labels} }}",
            self.fleet.addr(i).unwrap(),
            self.fleet.port(),
            self.fleet.user_key().display(),
            self.fleet.config().display(),
            self.path("cm").display(),
        )
    }

    /// Write an inventory of `hosts` (`name`, TOML keys); returns its path.
    fn inventory(&self, hosts: &[(&str, String)]) -> String {
        let mut t = String::new();
        for (name, keys) in hosts {
            t.push_str(&format!("[[host]]\nname = \"{name}\"\n{keys}\n\n"));
        }
        let p = self.path("inv.toml");
        std::fs::write(&p, t).unwrap();
        p.to_str().unwrap().to_string()
    }

    /// `nettune fleet ARGS` run inside the hub namespace.
    fn fleet(&self, args: &[&str]) -> Output {
        self.lab.hosts()[0]
            .command(BIN)
            .arg("fleet")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The leaf interface of spoke `i` (in its namespace).
    fn leaf(&self, i: usize) -> String {
        let l = self.lab.links().iter().find(|l| l.host == i).unwrap();
        l.leaf.iface.clone()
    }

    /// The hub's end of spoke `i`'s link (in the hub's namespace).
    fn hub_end(&self, i: usize) -> String {
        let l = self.lab.links().iter().find(|l| l.host == i).unwrap();
        l.hub.iface.clone()
    }
}

impl Rig {
    /// Close every master connection the runs left (`ControlPersist`);
    /// returns how many sockets there were.
    fn close_masters(&self) -> usize {
        let mut n = 0;
        for e in std::fs::read_dir(self.path("cm")).into_iter().flatten() {
            let Ok(e) = e else { continue };
            n += 1;
            let _ = Command::new("ssh")
                .args(["-F", "/dev/null", "-S"])
                .arg(e.path())
                .args(["-O", "exit", "master"])
                .stdin(Stdio::null())
                .output();
        }
        n
    }

    /// Processes whose command line names this rig's master sockets.
    fn masters(&self) -> String {
        let cm = self.path("cm");
        let o = Command::new("pgrep")
            .arg("-af")
            .arg(cm.to_str().unwrap())
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.close_masters();
    }
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn outcomes(v: &Value) -> Vec<(String, String)> {
    v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_string(),
                h["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Interface names of an inspect document.
fn ifaces(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

#[test]
fn inspect_and_doctor_over_ssh_on_three_spokes_equal_each_hosts_own() {
    if !require_sshd("fleet_ssh::inspect_and_doctor_over_ssh") {
        return;
    }
    let rig = Rig::new(3, 1);
    let fixtures = ["c4-8xlarge", "nic-ena", "nic-mlx5"];
    let names = ["s1", "s2", "s3"];
    let mut hosts = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let dir = rig.path(name);
        std::fs::create_dir(&dir).unwrap();
        let st = Command::new("cp")
            .arg("-a")
            .arg(fixture_copy::fixture(fixtures[k]))
            .arg(dir.join("root"))
            .status()
            .unwrap();
        assert!(st.success());
        hosts.push((*name, rig.ssh_host(k + 1, "")));
    }
    let inv = rig.inventory(&hosts);
    let tpl = format!("{}/{{host}}/root", rig.tmp.path().display());

    // On fixture roots: each host's document is exactly its own inspect.
    let o = rig.fleet(&[
        "inspect",
        "--inventory",
        &inv,
        "--root-template",
        &tpl,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["failed"], serde_json::json!([]));
    for (k, name) in names.iter().enumerate() {
        let h = &v["hosts"][k];
        assert_eq!(h["outcome"], "ok", "{h}");
        let addr = rig.fleet.addr(k + 1).unwrap();
        assert_eq!(
            h["transport"],
            format!("ssh root@{addr}:{}", rig.fleet.port())
        );
        let own = Command::new(BIN)
            .args(["inspect", "--json", "--root"])
            .arg(rig.path(name).join("root"))
            .output()
            .unwrap();
        assert!(own.status.success());
        assert_eq!(h["result"], json(&own), "{name}");
    }

    // Live: each agent sees its own namespace (its leaf veth, not the others').
    let o = rig.fleet(&["inspect", "--inventory", &inv, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    for k in 0..3 {
        let own = rig.lab.hosts()[k + 1]
            .command(BIN)
            .args(["inspect", "--json"])
            .output()
            .unwrap();
        assert!(own.status.success());
        let got = ifaces(&v["hosts"][k]["result"]);
        assert_eq!(got, ifaces(&json(&own)), "s{}", k + 1);
        assert!(got.contains(&rig.leaf(k + 1)), "{got:?}");
    }

    // doctor with a live sample in each namespace.
    let o = rig.fleet(&["doctor", "--inventory", &inv, "--sample", "0.5", "--json"]);
    assert!(matches!(o.status.code(), Some(0..=2)), "{}", stderr(&o));
    let v = json(&o);
    for h in v["hosts"].as_array().unwrap() {
        assert_eq!(h["outcome"], "ok", "{h}");
        assert!(h["findings"]["info"].is_u64(), "{h}");
        assert!(h["result"]["findings"].is_array(), "{h}");
    }

    // The table says the same.
    let o = rig.fleet(&["inspect", "--inventory", &inv, "--root-template", &tpl]);
    assert_eq!(o.status.code(), Some(0));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("3 host(s): 3 ok"), "{table}");

    // One master per host, in the test's directory (not ~/.ssh), all closed.
    assert!(
        !rig.masters().is_empty(),
        "no ssh master in {:?}",
        rig.path("cm")
    );
    assert_eq!(rig.close_masters(), 3);
    wait_for(Duration::from_secs(5), "the masters exiting", || {
        rig.masters().is_empty()
    });
}

#[test]
fn unreachable_wrong_host_key_and_refused_key_fail_alone_with_ssh_own_reason() {
    if !require_sshd("fleet_ssh::unreachable_wrong_host_key_and_refused_key") {
        return;
    }
    let mut rig = Rig::new(4, 1);
    rig.fleet.stop(2).unwrap();
    rig.fleet.wrong_host_key(3).unwrap();
    let stranger = rig.fleet.stranger_config().unwrap();
    let key = rig.fleet.dir().join("stranger_key");
    let s4 = rig
        .ssh_host(4, "")
        .replace(
            &rig.fleet.user_key().display().to_string(),
            &key.display().to_string(),
        )
        .replace(
            &rig.fleet.config().display().to_string(),
            &stranger.display().to_string(),
        );
    let hosts = [
        ("ok", rig.ssh_host(1, "")),
        ("stopped", rig.ssh_host(2, "")),
        ("impostor", rig.ssh_host(3, "")),
        ("stranger", s4),
    ];
    let inv = rig.inventory(&hosts);
    let o = rig.fleet(&["inspect", "--inventory", &inv, "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(
        outcomes(&v),
        pairs(&[
            ("ok", "ok"),
            ("stopped", "failed"),
            ("impostor", "failed"),
            ("stranger", "failed")
        ])
    );
    assert_eq!(
        v["failed"],
        serde_json::json!(["stopped", "impostor", "stranger"])
    );
    let why = |k: usize| {
        v["hosts"][k]["error"]["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(why(1).contains("Connection refused"), "{}", why(1));
    assert!(
        why(2).contains("Host key verification failed")
            || why(2).contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
        "{}",
        why(2)
    );
    assert!(why(3).contains("Permission denied"), "{}", why(3));
    let e = stderr(&o);
    for name in ["stopped", "impostor", "stranger"] {
        // named once, with its transport: `NAME (ssh ...) failed: ...`
        assert!(
            e.lines().any(
                |l| l.starts_with(&format!("nettune: fleet inspect: {name} (ssh "))
                    && l.contains(") failed:")
            ),
            "{e}"
        );
    }
    assert!(e.contains("Connection refused"), "{e}");
    assert!(!e.contains("fleet inspect: ok "), "{e}");
}

/// Make the copy's `rel` file immutable (root ignores modes); returns the undo.
fn lock(c: &Copy, rel: &str) -> impl FnOnce() {
    let p = c.root.join(rel);
    let st = Command::new("chattr").arg("+i").arg(&p).status().unwrap();
    assert!(st.success());
    move || {
        let _ = Command::new("chattr").arg("-i").arg(&p).status();
    }
}

#[test]
fn apply_on_four_spokes_rolls_back_the_one_that_fails_and_the_others_verify_and_roll_back() {
    if !require_sshd("fleet_ssh::apply_on_four_spokes") {
        return;
    }
    let rig = Rig::new(4, 1);
    let copies: Vec<Copy> = (0..4).map(|_| copy("c4-8xlarge")).collect();
    let before: Vec<_> = copies.iter().map(|c| tree(&c.root)).collect();
    let names = ["a", "b", "c", "d"];
    let hosts: Vec<(&str, String)> = names
        .iter()
        .zip(&copies)
        .enumerate()
        .map(|(k, (n, c))| {
            let labels = format!(
                "root = \"{}\", state_dir = \"{}\"",
                c.root.display(),
                c.state.display()
            );
            (*n, rig.ssh_host(k + 1, &labels))
        })
        .collect();
    let inv = rig.inventory(&hosts);
    // One plan for all: its last change is a file b cannot write.
    let o = Command::new(BIN)
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(&copies[0].root)
        .output()
        .unwrap();
    assert!(o.status.success());
    let plan = rig.path("plan.json");
    std::fs::write(&plan, &o.stdout).unwrap();
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    let last = p["changes"].as_array().unwrap().last().unwrap()["target"]["path"]
        .as_str()
        .unwrap()
        .trim_start_matches('/')
        .to_string();
    let unlock = lock(&copies[1], &last);
    let plan = plan.to_str().unwrap();
    let o = rig.fleet(&[
        "apply",
        "--inventory",
        &inv,
        "--plan",
        plan,
        "--json",
        "--yes",
    ]);
    unlock();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(
        outcomes(&v),
        pairs(&[("a", "ok"), ("b", "rolled_back"), ("c", "ok"), ("d", "ok")])
    );
    assert_eq!(v["failed"], serde_json::json!(["b"]));
    let e = stderr(&o);
    assert!(
        e.lines()
            .any(|l| l.starts_with("nettune: fleet apply: b (ssh ")
                && l.contains(") failed, rolled back:")),
        "{e}"
    );
    assert!(e.contains(&last), "{e}");
    fixture_copy::assert_same(&before[1], &tree(&copies[1].root));
    for k in [0, 2, 3] {
        assert_ne!(before[k], tree(&copies[k].root), "{}", names[k]);
    }

    let ok3 = "a,c,d";
    let o = rig.fleet(&["verify", "--inventory", &inv, "--limit", ok3, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    for h in v["hosts"].as_array().unwrap() {
        assert_eq!(h["outcome"], "ok", "{h}");
        assert_eq!(h["drifted"], serde_json::json!([]), "{h}");
    }
    // A knob changed behind a's back: drift, exit 3 (no host failed).
    std::fs::write(copies[0].root.join(&last), "4096 16384 4194304\n").unwrap();
    let o = rig.fleet(&["verify", "--inventory", &inv, "--limit", "a,c", "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(outcomes(&v), pairs(&[("a", "drift"), ("c", "ok")]));
    let d = v["hosts"][0]["drifted"].as_array().unwrap();
    assert!(
        d.len() == 1 && d[0].as_str().unwrap().contains(&last),
        "{d:?}"
    );

    let o = rig.fleet(&["rollback", "--inventory", &inv, "--limit", ok3]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for k in [0, 2, 3] {
        fixture_copy::assert_same(&before[k], &tree(&copies[k].root));
    }
}

/// A stand-in for another nettune: answers `hello` as `version`, then
/// waits for end of input.
fn fake_agent(path: &Path, version: &str) {
    let hello = format!(
        r#"{{"type":"hello","version":{PROTO_VERSION},"nettune_version":"{version}","caps":[]}}"#
    );
    let mut bytes = b"NTAG".to_vec();
    bytes.extend_from_slice(&PROTO_VERSION.to_be_bytes());
    bytes.extend_from_slice(&u32::try_from(hello.len()).unwrap().to_be_bytes());
    bytes.extend_from_slice(hello.as_bytes());
    let esc: String = bytes.iter().map(|b| format!("\\{b:03o}")).collect();
    std::fs::write(path, format!("#!/bin/sh\nprintf '{esc}'\ncat >/dev/null\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `/etc/netns/NS/passwd`: the machine's passwd with root's home at `home`,
/// which `ip netns exec` (so the spoke's sshd, and its sessions' working
/// directory) sees instead of /etc/passwd; removed on drop. The copy of
/// nettune lands under `home`, never in the machine's /root.
struct Home {
    dir: PathBuf,
    made_etc_netns: bool,
}

impl Home {
    fn new(ns: &str, home: &Path) -> Home {
        let made_etc_netns = !Path::new("/etc/netns").exists();
        let dir = Path::new("/etc/netns").join(ns);
        std::fs::create_dir_all(&dir).unwrap();
        let guard = Home {
            dir,
            made_etc_netns,
        };
        std::fs::create_dir_all(home).unwrap();
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
        let ours: String = passwd
            .lines()
            .map(|l| {
                let mut f: Vec<&str> = l.split(':').collect();
                let h = home.to_str().unwrap();
                if f.first() == Some(&"root") && f.len() == 7 {
                    f[5] = h;
                }
                format!("{}\n", f.join(":"))
            })
            .collect();
        std::fs::write(guard.dir.join("passwd"), ours).unwrap();
        guard
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.dir.join("passwd"));
        let _ = std::fs::remove_dir(&self.dir);
        if self.made_etc_netns {
            // Only when empty: another run may be using it.
            let _ = std::fs::remove_dir("/etc/netns");
        }
    }
}

#[test]
fn an_agent_of_another_version_or_none_is_refreshed_or_named_with_no_copy() {
    if !require_sshd("fleet_ssh::an_agent_of_another_version_or_none") {
        return;
    }
    let root_cache = Path::new("/root/.cache/nettune");
    let had_root_cache = root_cache.exists();
    let lab = Lab::build(LabSpec {
        prefix: "ntfssh".into(),
        ..LabSpec::new(3, 1)
    })
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let homes = [tmp.path().join("home1"), tmp.path().join("home2")];
    let _h1 = Home::new(lab.hosts()[1].name(), &homes[0]);
    let _h2 = Home::new(lab.hosts()[2].name(), &homes[1]);
    let fleet = SshFleet::start(&lab, &[1, 2]).unwrap();
    std::fs::create_dir(tmp.path().join("cm")).unwrap();
    let rig = Rig { fleet, lab, tmp };
    let fake = rig.path("fake-nettune");
    fake_agent(&fake, "9.9.9");
    let missing = rig.path("missing/nettune");
    let hosts = [
        (
            "old",
            rig.ssh_host(1, &format!("nettune = \"{}\"", fake.display())),
        ),
        (
            "none",
            rig.ssh_host(2, &format!("nettune = \"{}\"", missing.display())),
        ),
    ];
    let inv = rig.inventory(&hosts);

    let o = rig.fleet(&["inspect", "--inventory", &inv, "--no-copy", "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["failed"], serde_json::json!(["old", "none"]));
    let old = &v["hosts"][0]["error"];
    assert_eq!(old["kind"], "version", "{old}");
    let m = old["message"].as_str().unwrap();
    assert!(
        m.contains("the agent is nettune 9.9.9")
            && m.contains(&format!("this controller {VERSION}")),
        "{m}"
    );
    let none = v["hosts"][1]["error"]["message"].as_str().unwrap();
    assert!(none.contains("No such file or directory"), "{none}");
    for h in &homes {
        assert!(
            !h.join(".cache").exists(),
            "--no-copy copied to {}",
            h.display()
        );
    }

    // Copying allowed: each host gets this nettune in its home's cache.
    let o = rig.fleet(&["inspect", "--inventory", &inv, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for h in json(&o)["hosts"].as_array().unwrap() {
        assert_eq!(h["outcome"], "ok", "{h}");
        assert!(h["result"]["interfaces"].is_array(), "{h}");
    }
    let size = std::fs::metadata(BIN).unwrap().len();
    for h in &homes {
        let c = h.join(format!(".cache/nettune/nettune-{VERSION}"));
        let m = std::fs::metadata(&c).unwrap();
        assert_eq!(m.len(), size, "{}", c.display());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
    }
    // The copy an earlier run made is used, even with --no-copy.
    let o = rig.fleet(&["inspect", "--inventory", &inv, "--no-copy", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(had_root_cache, root_cache.exists(), "wrote /root/.cache");
}

/// `ip netns exec HUB ssh -F CONFIG hI -- nettune agent --stdio`, without
/// multiplexing: an agent session the test can cut.
#[derive(Debug)]
struct HubSsh {
    hub: String,
    config: PathBuf,
    host: usize,
}

impl fleet::Transport for HubSsh {
    fn argv(&self) -> Result<Vec<OsString>, fleet::transport::TransportError> {
        let mut v: Vec<OsString> = ["ip", "netns", "exec", &self.hub, "ssh", "-F"]
            .iter()
            .map(OsString::from)
            .collect();
        v.push(self.config.clone().into_os_string());
        for a in [
            SshFleet::alias(self.host).as_str(),
            "--",
            BIN,
            "agent",
            "--stdio",
        ] {
            v.push(a.into());
        }
        Ok(v)
    }
    fn describe(&self) -> String {
        format!("ssh h{} from {}", self.host, self.hub)
    }
}

/// RX queues of `iface` seen from namespace `ns`.
fn rx_queues(ns: &lab::Netns, iface: &str) -> u32 {
    let n = ns
        .sh(&format!("ls /sys/class/net/{iface}/queues | grep -c rx-"))
        .unwrap();
    n.trim().parse().unwrap()
}

fn wait_for(total: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < total, "{what}: not within {total:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_channel_change_over_ssh_is_confirmed_or_restored_by_the_host_when_the_path_is_cut() {
    if !require_sshd("fleet_ssh::a_channel_change_over_ssh") {
        return;
    }
    let rig = Rig::new(1, 4);
    let spoke = &rig.lab.hosts()[1];
    let leaf = rig.leaf(1);
    assert_eq!(rx_queues(spoke, &leaf), 4);
    // The spoke's own plan, with one change: halve its veth's RX channels.
    let o = spoke
        .command(BIN)
        .args([
            "plan",
            "--profile",
            "balanced",
            "--root",
            "/",
            "--iface",
            &leaf,
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    plan["changes"] = serde_json::json!([{
        "phase": "channels", "knob": "rx",
        "target": {"kind": "ethtool", "iface": leaf, "group": "channels", "attr": "rx"},
        "before": "4", "after": "2", "rule": "channels", "reason": "test", "source": "test"
    }]);
    let pf = rig.path("plan.json");
    std::fs::write(&pf, serde_json::to_string(&plan).unwrap()).unwrap();
    let inv = rig.inventory(&[("s1", rig.ssh_host(1, ""))]);
    let st = format!("{}/{{host}}/state", rig.tmp.path().display());

    // The normal path: applied, confirmed over a fresh session, and still
    // in force after the deadline.
    let within = 3;
    let o = rig.fleet(&[
        "apply",
        "--yes",
        "--inventory",
        &inv,
        "--plan",
        pf.to_str().unwrap(),
        "--confirm-timeout",
        &within.to_string(),
        "--state-dir-template",
        &st,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["hosts"][0]["outcome"], "ok", "{v}");
    assert_eq!(v["hosts"][0]["result"]["confirm"]["within"], within, "{v}");
    assert_eq!(rx_queues(spoke, &leaf), 2);
    std::thread::sleep(Duration::from_secs(within + 2));
    assert_eq!(
        rx_queues(spoke, &leaf),
        2,
        "a confirmed change was rolled back"
    );
    let o = rig.fleet(&["rollback", "--inventory", &inv, "--state-dir-template", &st]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rx_queues(spoke, &leaf), 4);

    // The cut path: the same apply through the agent over ssh, then the
    // hub's end of the link goes down before any confirm.
    let t = HubSsh {
        hub: rig.lab.hosts()[0].name().to_string(),
        config: rig.fleet.config(),
        host: 1,
    };
    let limit = Duration::from_secs(30);
    let mut agent = fleet::Agent::connect(&t, VERSION, limit).unwrap();
    let state = rig.path("cut-state");
    let (v, code) = agent
        .json(
            &Request::Apply {
                plan,
                root: None,
                state_dir: Some(state.clone()),
                force: false,
                replan: false,
                confirm_within: Some(u32::try_from(within).unwrap()),
                dry_run: false,
            },
            limit,
        )
        .unwrap();
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["confirm"]["status"], "pending", "{v}");
    let g = v["generation"].as_u64().unwrap();
    let deadline = v["confirm"]["deadline"].as_u64().unwrap();
    assert_eq!(rx_queues(spoke, &leaf), 2);
    let hub = &rig.lab.hosts()[0];
    let cut = rig.hub_end(1);
    hub.ip(&["link", "set", &cut, "down"]).unwrap();
    wait_for(
        Duration::from_secs(within + 10),
        "the host restoring its channels",
        || rx_queues(spoke, &leaf) == 4,
    );
    // Not before the deadline (whole Unix seconds).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        now + 1 >= deadline,
        "restored at {now}, deadline {deadline}"
    );
    hub.ip(&["link", "set", &cut, "up"]).unwrap();
    drop(agent);
    let f = state.join(format!("confirm/{g:06}.json"));
    wait_for(Duration::from_secs(5), "the confirm file", || {
        std::fs::read_to_string(&f).is_ok_and(|t| t.contains("rolled_back"))
    });
    let h = spoke
        .command(BIN)
        .args(["history", "--json", "--root", "/", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let h = json(&h);
    let why = h["generations"][0]["rolled_back_reason"].as_str().unwrap();
    assert!(why.starts_with("not confirmed within 3 s"), "{why}");
}

/// `net.ipv4.tcp_tw_reuse` in lab host `i`'s namespace.
fn tw_reuse(rig: &Rig, i: usize) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", rig.lab.hosts()[i].name()])
        .args(["cat", "/proc/sys/net/ipv4/tcp_tw_reuse"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn an_experiment_with_hosts_fleet_runs_over_ssh_and_rolls_back_every_cell() {
    if !require_sshd("fleet_ssh::an_experiment_with_hosts_fleet_runs_over_ssh") {
        return;
    }
    // The server on the hub, the client on the spoke: both reached over ssh
    // from the controller in the hub's namespace.
    let rig = Rig::with_sshd_on(1, 1, &[0, 1]);
    let hub = rig.fleet.addr(0).unwrap();
    let srv = format!("{}\nroles = [\"server\"]", rig.ssh_host(0, ""));
    let label = format!("server_address = \"{hub}\"");
    let cli = format!("{}\nroles = [\"clients\"]", rig.ssh_host(1, &label));
    let inv = rig.inventory(&[("srv", srv), ("cli", cli)]);
    let file = rig.path("exp.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"fleet-ssh-tw\"\nseed = 5\nrepeats = 2\nwarmup = 0\n\
             [hosts.fleet]\ninventory = \"{inv}\"\nserver = \"server\"\nclients = \"clients\"\n\
             [[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n\
             [[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\n\
             [responses]\nmetrics = [\"transactions\"]\n"
        ),
    )
    .unwrap();
    let before = [tw_reuse(&rig, 0), tw_reuse(&rig, 1)];
    let states = format!("{}/{{host}}/state", rig.tmp.path().display());
    let out = rig.path("out");
    let o = rig.lab.hosts()[0]
        .command(BIN)
        .arg("experiment")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(["--state-dir-template", &states, "--timeout", "60"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["interrupted"], false);
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["status"]["state"], "done", "{c:#}");
        assert_eq!(c["runs"].as_array().unwrap().len(), 2, "{c:#}");
    }
    // Each host's journal: one generation per cell, each rolled back.
    for host in ["srv", "cli"] {
        let dir = states.replace("{host}", host);
        let h = Command::new(BIN)
            .args(["history", "--json", "--state-dir", &dir])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&h.stdout).unwrap_or_else(|e| panic!("{e}: {h:?}"));
        let gens = v["generations"].as_array().unwrap();
        assert_eq!(gens.len(), 2, "{host}: {v:#}");
        assert!(
            gens.iter().all(|g| !g["rolled_back_at"].is_null()),
            "{host}: {v:#}"
        );
    }
    assert_eq!([tw_reuse(&rig, 0), tw_reuse(&rig, 1)], before);
    // The controller's ssh masters are the rig's (-S in its temp directory).
    assert!(rig.close_masters() >= 1);
}
