//! Confirm deadlines (docs/fleet.md, "Confirm deadline"), always on a copy
//! of a fixture root: an apply with `confirm_within` that the controller
//! does not confirm is rolled back by the host itself at the deadline, even
//! when the agent's whole process group was killed right after the apply
//! (the cut path); one confirmed over a fresh session stays.

#![allow(clippy::unwrap_used)]

mod fixture_copy;

use fixture_copy::{assert_same, bin, copy, nettune, ok, text, tree, Copy};
use fleet::proto::{self, Request, Response, MAX_REQUEST, MAX_RESPONSE};
use fleet::{Agent, Local};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_nettune");
const T: Duration = Duration::from_secs(30);

fn local() -> Agent {
    Agent::connect(&Local { exe: EXE.into() }, "0.1.0", T).unwrap()
}

fn plan(c: &Copy) -> serde_json::Value {
    let o = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(&c.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn apply_req(c: &Copy, plan: serde_json::Value, within: u32) -> Request {
    Request::Apply {
        plan,
        root: Some(c.root.clone()),
        state_dir: Some(c.state.clone()),
        force: false,
        replan: false,
        confirm_within: Some(within),
        dry_run: false,
    }
}

/// `history --json` from the CLI (which, unlike the agent, never rolls
/// anything back itself): the first generation.
fn history(c: &Copy) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(&ok(c, &["history", "--json"])).unwrap();
    v["generations"][0].clone()
}

/// The confirm file's status, as the watchdog and `confirm` leave it.
fn status(c: &Copy, g: u64) -> Option<String> {
    let p = c.state.join(format!("confirm/{g:06}.json"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).ok()?).ok()?;
    v["status"].as_str().map(str::to_string)
}

/// Poll `done` every 100 ms for at most `total`.
fn wait_for(total: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < total, "{what}: not within {total:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The apply answer's generation and deadline.
fn armed(v: &serde_json::Value) -> (u64, u64) {
    let g = v["generation"].as_u64().unwrap();
    assert_eq!(v["confirm"]["generation"].as_u64(), Some(g), "{v}");
    assert_eq!(v["confirm"]["status"], "pending", "{v}");
    (g, v["confirm"]["deadline"].as_u64().unwrap())
}

#[test]
fn an_unconfirmed_apply_is_rolled_back_at_its_deadline_with_why() {
    let c = copy("c4-8xlarge");
    let before = tree(&c.root);
    let mut a = local();
    let (v, code) = a.json(&apply_req(&c, plan(&c), 2), T).unwrap();
    assert_eq!(code, 0, "{v}");
    let (g, _) = armed(&v);
    assert_ne!(tree(&c.root), before, "the apply changed nothing");
    drop(a);
    // The watchdog alone: no agent request runs until it is done.
    wait_for(T, "the rollback at the deadline", || {
        status(&c, g).as_deref() == Some("rolled_back")
    });
    assert_same(&before, &tree(&c.root));
    let h = history(&c);
    assert!(h["rolled_back_at"].is_u64(), "{h}");
    let why = h["rolled_back_reason"].as_str().unwrap();
    assert!(why.starts_with("not confirmed within 2 s"), "{why}");
    let human = String::from_utf8(nettune(&c, &["history"]).stdout).unwrap();
    assert!(human.contains("not confirmed within 2 s"), "{human}");

    // Confirming too late says so.
    let mut b = local();
    let r = b
        .request(
            &Request::Confirm {
                root: Some(c.root.clone()),
                state_dir: Some(c.state.clone()),
                generation: u32::try_from(g).unwrap(),
            },
            T,
        )
        .unwrap();
    assert!(
        matches!(&r, Response::Error { message, .. } if message.contains("rolled back")),
        "{r:?}"
    );
}

#[test]
fn an_apply_confirmed_over_a_fresh_session_stays_after_the_deadline() {
    let c = copy("c4-8xlarge");
    let before = tree(&c.root);
    let mut a = local();
    let (v, _) = a.json(&apply_req(&c, plan(&c), 5), T).unwrap();
    let (g, deadline) = armed(&v);
    drop(a);
    let applied = tree(&c.root);
    assert_ne!(applied, before);

    let mut b = local();
    let (v, code) = b
        .json(
            &Request::Confirm {
                root: Some(c.root.clone()),
                state_dir: Some(c.state.clone()),
                generation: u32::try_from(g).unwrap(),
            },
            T,
        )
        .unwrap();
    assert_eq!((code, v["status"].as_str()), (0, Some("confirmed")), "{v}");
    // Past the deadline (as the watchdog counts it, in Unix seconds) the
    // generation is still in force, and the watchdog said why it left.
    wait_for(T, "the deadline to pass", || {
        host::journal::now() > deadline
    });
    let log = c.state.join(format!("confirm/{g:06}.watchdog.log"));
    wait_for(T, "the watchdog to leave", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Confirmed"))
    });
    assert_eq!(status(&c, g).as_deref(), Some("confirmed"));
    assert_eq!(tree(&c.root), applied);
    assert!(history(&c)["rolled_back_at"].is_null());
    // A request after the deadline changes nothing either.
    let (v, code) = b
        .json(
            &Request::Verify {
                root: Some(c.root.clone()),
                state_dir: Some(c.state.clone()),
            },
            T,
        )
        .unwrap();
    assert_eq!((v["drift"].as_u64(), code), (Some(0), 0), "{v}");
}

#[test]
fn the_watchdog_rolls_back_after_the_agents_process_group_is_killed() {
    let c = copy("c4-8xlarge");
    let before = tree(&c.root);
    // A transport's agent: its own process group, as fleet's transports run it.
    let mut child = Command::new(EXE)
        .args(["agent", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut w = child.stdin.take().unwrap();
    let mut r = child.stdout.take().unwrap();
    proto::write_preamble(&mut w).unwrap();
    assert_eq!(proto::read_preamble(&mut r).unwrap(), proto::PROTO_VERSION);
    proto::write_frame(&mut w, &apply_req(&c, plan(&c), 2), MAX_REQUEST).unwrap();
    let resp: Response = proto::read_msg(&mut r, MAX_RESPONSE).unwrap();
    let Response::Json { value, .. } = resp else {
        panic!("{resp:?}")
    };
    let (g, _) = armed(&value);
    // The path is cut: the whole group dies at once.
    let pgid = child.id().to_string();
    let o = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let st = child.wait().unwrap();
    assert!(!st.success());
    wait_for(T, "the watchdog's rollback", || {
        status(&c, g).as_deref() == Some("rolled_back")
    });
    assert_same(&before, &tree(&c.root));
    let why = history(&c)["rolled_back_reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(why.contains("confirm deadline"), "{why}");
}
