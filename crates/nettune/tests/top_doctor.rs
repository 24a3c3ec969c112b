//! `nettune top`'s findings panel on the doctor rules: a rate finding appears
//! when softnet drops grow in the window and clears once they stop, and the
//! snapshot rules give what `nettune doctor` gives.

#![allow(clippy::unwrap_used)]

use host::sampler::Sampler;
use host::Root;
use nettune::top::findings::{DoctorFindings, FindingSource, Window};
use nettune::top::App;
use std::path::{Path, PathBuf};

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Counters of a 2-CPU host with `drops` softnet backlog drops on cpu0 so far
/// and `ticks` seconds of clock.
fn write_proc(dir: &Path, ticks: u64, drops: u32) {
    std::fs::create_dir_all(dir.join("proc/net")).unwrap();
    let t = ticks * 100;
    std::fs::write(
        dir.join("proc/stat"),
        format!(
            "cpu  {u} 0 {u} {i} 0 0 {s} 0 0 0\ncpu0 {u} 0 {u} 0 0 0 {s} 0 0 0\ncpu1 0 0 0 {i} 0 0 0 0 0 0\n",
            u = t / 4,
            s = t / 2,
            i = t,
        ),
    )
    .unwrap();
    let row = |cpu: u32, processed: u64, dropped: u32| {
        format!(
            "{processed:08x} {dropped:08x} 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 {cpu:08x}\n"
        )
    };
    std::fs::write(
        dir.join("proc/net/softnet_stat"),
        row(0, ticks * 90_000, drops) + &row(1, ticks * 10, 0),
    )
    .unwrap();
}

#[test]
fn softnet_drops_appear_and_clear_on_the_panel() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = host::read_snapshot(&Root::new(fixture_dir("kvm-2vcpu-6.18")));
    let mut app = App::new(
        model::Nanos(0),
        snap,
        vec![],
        Box::new(DoctorFindings::new(Root::new(fixture_dir(
            "kvm-2vcpu-6.18",
        )))),
    );
    let mut sampler = Sampler::new(Root::new(tmp.path()));
    let mut drops = 0u32;
    let mut seen = Vec::new();
    for sec in 1..=14u64 {
        // Drops grow in seconds 2 to 4 only.
        if (2..=4).contains(&sec) {
            drops += 500;
        }
        write_proc(tmp.path(), sec, drops);
        let mut s = sampler.sample().unwrap();
        s.at = model::Nanos(sec * 1_000_000_000);
        app.sample(s);
        let rows = app.screen().findings;
        let row = rows.iter().find(|r| r.finding.id == "softnet-drops");
        seen.push(row.map(|r| (r.cleared, r.age_s)));
    }
    // No interval yet at second 1; drops from the interval ending at 2.
    assert_eq!(seen[0], None, "{seen:?}");
    assert_eq!(seen[1], Some((false, 0)), "{seen:?}");
    assert_eq!(seen[3], Some((false, 2)), "{seen:?}");
    // The window spans the last 6 samples (5 intervals): the last growing
    // interval (3→4) leaves it at second 9, and the finding shows as cleared
    // from then on for 10 s.
    assert_eq!(seen[7], Some((false, 6)), "{seen:?}");
    assert_eq!(seen[8], Some((true, 0)), "{seen:?}");
    assert_eq!(seen[13], Some((true, 5)), "{seen:?}");
}

#[test]
fn snapshot_rules_match_doctor() {
    let root = Root::new(fixture_dir("c4-8xlarge"));
    let snap = host::read_snapshot(&root);
    let mut src = DoctorFindings::new(root.clone());
    let rows = src.findings(
        &snap,
        Window {
            samples: &[],
            deltas: &[],
        },
    );
    let mut input = doctor::Input::new(snap.clone());
    input.extras = host::extras::read_extras(&root, &snap);
    let report = doctor::diagnose(&input);
    let want: Vec<(String, String)> = report
        .findings
        .iter()
        .map(|f| (f.id.as_str().to_string(), f.subject.clone()))
        .collect();
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.id.clone(), r.subject.clone()))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert!(
        got.iter().any(|(id, s)| id == "rps-off" && s == "eth0"),
        "{got:?}"
    );
}
