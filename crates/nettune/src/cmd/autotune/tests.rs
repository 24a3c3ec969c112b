use super::progress::progress_line;
use super::*;
use tune::autotune::{Search, SearchSpace};

#[test]
fn times() {
    assert_eq!(parse_time("90").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_time("10m").unwrap(), Duration::from_secs(600));
    assert_eq!(parse_time("1h").unwrap(), Duration::from_secs(3600));
    assert!(parse_time("0s").is_err());
    assert!(parse_time("25h").is_err());
    assert!(parse_time("m").is_err());
}

#[test]
fn forward_after_takes_a_percentage_or_off() {
    assert_eq!(parse_forward_after("20"), Ok(ForwardAfter(Some(20.0))));
    assert_eq!(parse_forward_after("7.5%"), Ok(ForwardAfter(Some(7.5))));
    assert_eq!(parse_forward_after("off"), Ok(ForwardAfter(None)));
    for bad in ["0", "-5", "nan", "inf", "1e9", "x", ""] {
        let e = parse_forward_after(bad).unwrap_err();
        assert!(e.contains("or off"), "{bad}: {e}");
    }
}

#[test]
fn statistic_is_median_or_mean() {
    use model::stats::Statistic;
    assert_eq!(parse_statistic("median"), Ok(Statistic::Median));
    assert_eq!(parse_statistic("mean"), Ok(Statistic::Mean));
    let e = parse_statistic("average").unwrap_err();
    assert!(
        e.contains("\"average\"") && e.contains("median or mean"),
        "{e}"
    );
}

/// A rate is judged on means and a 99th percentile on medians, unless
/// `--statistic` says otherwise.
#[test]
fn the_statistic_follows_the_objective() {
    use model::stats::Statistic;
    let judged = |line: &[&str]| {
        let args = Args::try_parse_from(line).unwrap();
        let objective = args.objective.unwrap();
        check(&args, objective, false).unwrap().cfg.statistic
    };
    for o in ["max-throughput", "max-pps", "max-cps"] {
        assert_eq!(
            judged(&["autotune", "--objective", o]),
            Statistic::Mean,
            "{o}"
        );
    }
    assert_eq!(
        judged(&["autotune", "--objective", "min-p99"]),
        Statistic::Median
    );
    assert_eq!(
        judged(&[
            "autotune",
            "--objective",
            "max-throughput",
            "--statistic",
            "median"
        ]),
        Statistic::Median
    );
    assert_eq!(
        judged(&["autotune", "--objective", "min-p99", "--statistic", "mean"]),
        Statistic::Mean
    );
}

/// The progress line names what a Ctrl-C would keep: "none yet" in the
/// race, then the change its re-check proved, with the interval.
#[test]
fn progress_shows_the_best_proven_gain() {
    use model::experiment::{Factor, Metric};
    use tune::autotune::{Observation, SearchConfig, Step};
    let space = SearchSpace::new(vec![Factor {
        knob: Knob::TcpTwReuse,
        levels: vec![Level::Int(2), Level::Int(1)],
    }])
    .unwrap();
    let mut search = Search::new(space, SearchConfig::new(Metric::Transactions)).unwrap();
    let mut rng = model::stats::SplitMix64::new(7);
    let mut lines = Vec::new();
    while let Step::Measure { arm, seq } = search.next_step().unwrap() {
        let base = if arm.changes().is_empty() {
            500.0
        } else {
            14_000.0
        };
        let value = rng.normal(base, base * 0.02);
        search.record(&arm, Observation::new(value)).unwrap();
        let run = at::RunTrace {
            seq,
            arm: search.label(&arm),
            value,
            values: Default::default(),
            limited_by: None,
            others: None,
            drops: Vec::new(),
        };
        lines.push(progress_line(
            seq + 1,
            60,
            &run,
            "transactions",
            &search,
            Duration::from_secs(seq as u64),
            Duration::from_secs(60 - seq as u64),
        ));
    }
    assert!(lines[0].contains("best proven: none yet"), "{}", lines[0]);
    assert!(lines[0].starts_with("run 1/60 "), "{}", lines[0]);
    let last = lines.last().unwrap();
    assert!(
        last.contains("best proven: tcp_tw_reuse=1 +") && last.contains(" % ["),
        "{last}"
    );
    assert!(last.contains("s elapsed, at most"), "{last}");
}

/// Issue 38: the help after the options is read in a terminal of 100
/// columns, where clap would break a longer line mid-sentence; and it says
/// what the command does now, not what files were once called.
#[test]
fn help_text_fits_and_tells_no_history() {
    for line in EXAMPLES.lines() {
        assert!(line.chars().count() <= 100, "{} chars: {line}", line.len());
    }
    for old in ["outcome.json", "name before"] {
        assert!(!EXAMPLES.contains(old), "{old}");
    }
}
