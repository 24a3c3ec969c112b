//! `bench --probe`: a latency probe beside the load (an `rr` test on a
//! second control connection, or ICMP echo).

use super::*;

/// How long the load waits for the `rr` probe's test to be ready.
const PROBE_READY: Duration = Duration::from_secs(5);

/// [`run`] with a latency probe beside the load (`bench --probe`): the
/// result's `probe` says what it measured. A probe that cannot run (the
/// server refuses its test, no ICMP socket) leaves the load's test running
/// and says why in `probe.note` and in the notes.
pub fn run_with_probe(
    o: &ClientOpts,
    cfg: &TestConfig,
    probe: Option<&ProbeSpec>,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<BenchResult, EngineError> {
    let Some(spec) = probe.copied() else {
        return run(o, cfg, on_interval);
    };
    spec.check(cfg)?;
    let p = prepare(o, cfg)?;
    let mut res = match spec.kind {
        ProbeKind::Rr => run_rr_probe(o, cfg, &spec, p, on_interval)?,
        ProbeKind::Icmp => {
            let addr = p.addr.ip();
            let mut probe: Option<Result<IcmpProbe, String>> = None;
            let warmup = Duration::from_millis(cfg.warmup_ms);
            let duration = Duration::from_millis(cfg.duration_ms);
            let hooks = Hooks {
                after_go: Some(Box::new(|go: Instant| {
                    let start = go + warmup;
                    probe = Some(crate::probe::spawn_icmp(
                        spec,
                        addr,
                        o.source.clone(),
                        (start, start + duration),
                        o.interrupt.clone(),
                    ));
                })),
                ..Hooks::default()
            };
            let res = execute(o, cfg, p, on_interval, hooks);
            let report = match probe {
                Some(Ok(pr)) if res.is_err() => {
                    pr.abort();
                    None
                }
                Some(Ok(pr)) => Some(pr.join()),
                Some(Err(why)) => Some(ProbeReport::failed(&spec, why)),
                None => None,
            };
            let mut res = res?;
            res.probe =
                Some(report.unwrap_or_else(|| ProbeReport::failed(&spec, "did not start".into())));
            res
        }
    };
    if let Some(n) = res.probe.as_ref().and_then(|p| p.note.clone()) {
        res.notes.push(format!(
            "latency probe ({}): {}",
            spec.kind.name(),
            model::text::printable_capped(&n, 300)
        ));
    }
    Ok(res)
}

/// The `rr` probe: a second test (one open-loop tcp-rr flow) on the same
/// server, prepared beside the load's and started with it.
fn run_rr_probe(
    o: &ClientOpts,
    cfg: &TestConfig,
    spec: &ProbeSpec,
    p: Prepared,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<BenchResult, EngineError> {
    let pcfg = spec.rr_config(cfg);
    // The probe reaches the very address the load uses.
    let po = ClientOpts {
        host: p.addr.ip().to_string(),
        family: Some(Family::of(p.addr.ip())),
        cport: None,
        doctor: None,
        ..o.clone()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let pstop = stop.clone();
    let handle = std::thread::Builder::new().name("nt-probe".into()).spawn(
        move || -> Result<BenchResult, String> {
            let pp = match prepare(&po, &pcfg) {
                Ok(pp) => pp,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return Err(e.to_string());
                }
            };
            let _ = ready_tx.send(Ok(()));
            if go_rx.recv_timeout(Duration::from_secs(30)).is_err() {
                pp.abandon();
                return Err("the load's test did not start".into());
            }
            let hooks = Hooks {
                stop: Some(pstop),
                ..Hooks::default()
            };
            execute(&po, &pcfg, pp, &mut |_| {}, hooks).map_err(|e| e.to_string())
        },
    );
    // Ready: the load's `connected` releases the probe's (`before_go`).
    // Not ready in time: it gives up once `go_tx` is dropped, or at `stop`.
    let (handle, early) = match handle {
        Ok(h) => match ready_rx.recv_timeout(PROBE_READY) {
            Ok(Ok(())) => (Some(h), None),
            Ok(Err(e)) => {
                let _ = h.join();
                (None, Some(e))
            }
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                (
                    Some(h),
                    Some(format!(
                        "its test was not ready within {} s",
                        PROBE_READY.as_secs()
                    )),
                )
            }
        },
        Err(e) => (None, Some(format!("probe thread: {e}"))),
    };
    let hooks = if handle.is_some() && early.is_none() {
        Hooks {
            before_go: Some(Box::new(move || {
                let _ = go_tx.send(());
            })),
            ..Hooks::default()
        }
    } else {
        drop(go_tx);
        Hooks::default()
    };
    let res = execute(o, cfg, p, on_interval, hooks);
    if res.is_err() {
        stop.store(true, Ordering::Relaxed);
    }
    // The probe's test ends with the load's window (its own deadlines bound it).
    let joined = handle.map(|h| h.join());
    let report = match (early, joined) {
        (Some(why), _) => ProbeReport::failed(spec, why),
        (None, Some(Ok(Ok(r)))) => ProbeReport::from_rr(spec, &r),
        (None, Some(Ok(Err(e)))) => ProbeReport::failed(spec, e),
        (None, _) => ProbeReport::failed(spec, "probe thread panicked".into()),
    };
    let mut res = res?;
    res.probe = Some(report);
    Ok(res)
}
