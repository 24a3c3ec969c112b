//! `[responses]`: the metrics measured and the latency probe.

use super::raw::{RawProbe, RawResponses};
use super::validate::{truncate, Ctx};
use super::{ErrorKind, ExperimentError, Metric, Probe, ProbeKind, Responses};

/// The `[responses]` table: distinct known metrics and an optional probe.
pub(super) fn parse_responses(
    ctx: &Ctx<'_>,
    r: &RawResponses,
) -> Result<Responses, ExperimentError> {
    if r.metrics.get_ref().is_empty() {
        return Err(ctx.err(
            r.metrics.span(),
            "responses.metrics",
            ErrorKind::Structure("at least one metric"),
        ));
    }
    let mut metrics = Vec::new();
    for (i, m) in r.metrics.get_ref().iter().enumerate() {
        let Some(&(_, metric)) = Metric::NAMES.iter().find(|(n, _)| n == m.get_ref()) else {
            return Err(ctx.bad(
                m.span(),
                &format!("responses.metrics[{i}]"),
                m.get_ref(),
                "throughput, packet_rate, transactions, latency_p50, latency_p99, cpu_pct, softirq_pct, cpu_per_work, retransmits, loss_pct or irq_rate",
            ));
        };
        if metrics.contains(&metric) {
            return Err(ctx.err(
                m.span(),
                format!("responses.metrics[{i}]"),
                ErrorKind::Duplicate {
                    value: truncate(m.get_ref()),
                },
            ));
        }
        metrics.push(metric);
    }
    let probe = match &r.probe {
        None => None,
        Some(p) => Some(parse_probe(ctx, p)?),
    };
    Ok(Responses { metrics, probe })
}

/// `[responses.probe]`.
fn parse_probe(ctx: &Ctx<'_>, p: &RawProbe) -> Result<Probe, ExperimentError> {
    let kind = match p.kind.get_ref().as_str() {
        "rr" => ProbeKind::Rr,
        "icmp" => ProbeKind::Icmp,
        other => {
            return Err(ctx.bad(
                p.kind.span(),
                "responses.probe.kind",
                other,
                "\"rr\" or \"icmp\"",
            ))
        }
    };
    let interval_ms = ctx
        .float(
            &p.interval_ms,
            "responses.probe.interval_ms",
            float_range!("an interval of" 1 to 10000 "ms"),
        )?
        .unwrap_or(100.0);
    Ok(Probe { kind, interval_ms })
}
