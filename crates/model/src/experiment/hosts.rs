//! `[hosts]`: a lab topology built on this machine, or remote agents.

use std::ops::Range;

use toml::Spanned;

use super::raw::{RawHosts, RawLab};
use super::validate::{header_span, to_u32, Ctx};
use super::{ErrorKind, ExperimentError, Hosts, LabPath, LabTopology};

/// Most agents.
const MAX_AGENTS: usize = 16;

/// The `[hosts]` table: exactly one of `lab` and `agents`.
pub(super) fn parse_hosts(ctx: &Ctx<'_>, raw: &RawHosts) -> Result<Hosts, ExperimentError> {
    let hspan = header_span(ctx.text, "hosts");
    match (&raw.lab, &raw.agents) {
        (Some(_), Some(_)) => Err(ctx.err(
            hspan,
            "hosts",
            ErrorKind::Structure("give either hosts.lab or hosts.agents, not both"),
        )),
        (None, None) => Err(ctx.err(
            hspan,
            "hosts",
            ErrorKind::Structure("give hosts.lab (a lab topology) or hosts.agents (addresses)"),
        )),
        (None, Some(agents)) => parse_agents(ctx, agents, hspan).map(Hosts::Agents),
        (Some(lab), None) => parse_lab(ctx, lab, hspan).map(Hosts::Lab),
    }
}

/// `hosts.agents`: 1 to [`MAX_AGENTS`] addresses.
fn parse_agents(
    ctx: &Ctx<'_>,
    agents: &[Spanned<String>],
    hspan: Range<usize>,
) -> Result<Vec<String>, ExperimentError> {
    if agents.is_empty() {
        return Err(ctx.err(
            hspan,
            "hosts.agents",
            ErrorKind::Structure("at least one agent address"),
        ));
    }
    if agents.len() > MAX_AGENTS {
        return Err(ctx.err(
            hspan,
            "hosts.agents",
            ErrorKind::TooMany {
                what: "agents",
                count: agents.len(),
                max: MAX_AGENTS,
            },
        ));
    }
    let mut out = Vec::new();
    for (i, a) in agents.iter().enumerate() {
        let s = a.get_ref();
        if s.parse::<std::net::SocketAddr>().is_err() && s.parse::<std::net::IpAddr>().is_err() {
            return Err(ctx.bad(
                a.span(),
                &format!("hosts.agents[{i}]"),
                s,
                "an address such as \"192.0.2.7\" or \"[2001:db8::7]:7878\"",
            ));
        }
        out.push(s.clone());
    }
    Ok(out)
}

/// `[hosts.lab]`: the topology, jitter at most the delay.
fn parse_lab(
    ctx: &Ctx<'_>,
    lab: &RawLab,
    hspan: Range<usize>,
) -> Result<LabTopology, ExperimentError> {
    let path = match lab.path.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
        None | Some(("veth", _)) => LabPath::Veth,
        Some(("loopback", _)) => LabPath::Loopback,
        Some((other, span)) => {
            return Err(ctx.bad(span, "hosts.lab.path", other, "\"veth\" or \"loopback\""))
        }
    };
    let delay = float_range!("a delay of" 0 to 10000 "ms");
    let delay_ms = ctx
        .float(&lab.delay_ms, "hosts.lab.delay_ms", delay)?
        .unwrap_or(0.0);
    let jitter = float_range!("a jitter of" 0 to 10000 "ms");
    let jitter_ms = ctx
        .float(&lab.jitter_ms, "hosts.lab.jitter_ms", jitter)?
        .unwrap_or(0.0);
    if jitter_ms > delay_ms {
        let span = lab.jitter_ms.as_ref().map_or(hspan, Spanned::span);
        return Err(ctx.bad(span, "hosts.lab.jitter_ms", jitter_ms, "at most delay_ms"));
    }
    Ok(LabTopology {
        hosts: to_u32(ctx.int(&lab.hosts, "hosts.lab.hosts", 2, int_range!(2..=8))?),
        queues: to_u32(ctx.int(&lab.queues, "hosts.lab.queues", 1, int_range!(1..=64))?),
        rate_mbit: ctx.float(
            &lab.rate_mbit,
            "hosts.lab.rate_mbit",
            float_range!("a rate of" 0.001 to 100000 "Mbit/s"),
        )?,
        delay_ms,
        jitter_ms,
        loss_pct: ctx
            .float(
                &lab.loss_pct,
                "hosts.lab.loss_pct",
                float_range!("a loss of" 0 to 100 "%"),
            )?
            .unwrap_or(0.0),
        path,
    })
}
