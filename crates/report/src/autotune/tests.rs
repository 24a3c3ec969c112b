use super::*;

fn fixture(name: &str) -> AutotuneResults {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    AutotuneResults::from_value(&doc).unwrap()
}

/// A search with a forward pass: each pass's rounds end inside its own
/// race (7 then 5 arms of 3 runs; then 6 arms from run 48 on, and
/// the budget's end at 87).
#[test]
fn each_pass_has_its_own_rounds() {
    let r = fixture("autotune-forward-results.json");
    let passes = r.pass_views();
    assert_eq!(passes.len(), 2);
    assert!(passes[0].on_top_of.is_empty());
    assert_eq!(passes[1].on_top_of, ["congestion_control=cubic"]);
    assert_eq!(r.round_ends_in(&passes[0]), [21, 36]);
    assert_eq!(r.round_ends_in(&passes[1]), [66, 81, 87]);
    // A file of before forward passes: one pass, the old rounds.
    let old = fixture("autotune-results.json");
    let one = old.pass_views();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].race_end, 63);
    assert_eq!(old.round_ends_in(&one[0]), old.round_ends());
    // Hostile bounds are clamped to the trace.
    let mut bad = r.clone();
    bad.passes[1].first_run = 10_000;
    bad.passes[1].race_end = 5;
    let v = bad.pass_views();
    assert_eq!((v[1].first_run, v[1].race_end), (87, 87));
    assert!(bad.round_ends_in(&v[1]).is_empty());
}

/// The race's rounds end where the re-check begins: 4 rounds of 7, 6,
/// 4 and 4 arms (rps_cpus out after round 1, tcp_wmem and
/// napi_defer_hard_irqs after round 2: 63 runs) then 18; 2 rounds of 5
/// arms (30) then 27.
#[test]
fn the_race_ends_after_its_rounds() {
    assert_eq!(fixture("autotune-results.json").race_runs(), 63);
    assert_eq!(fixture("autotune-max-cps-results.json").race_runs(), 30);
    assert_eq!(
        fixture("autotune-results.json").round_ends(),
        [21, 39, 51, 63]
    );
    // An interrupted search saves its rounds too: its race still ends
    // after them (it counted every run as race before).
    let mut r = fixture("autotune-results.json");
    r.interrupted = true;
    assert_eq!(r.race_runs(), 63);
    // A file of before, interrupted, without rounds: the whole trace.
    r.rounds = 0;
    r.rechecks.clear();
    assert_eq!(r.race_runs(), 81);
}
