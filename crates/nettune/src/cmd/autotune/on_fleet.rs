//! `nettune autotune --inventory F --server H --clients ROLE`: the search on
//! real hosts through their agents (docs/autotune.md, "On real hosts"), the
//! same search as in the lab over `fleet::executor::FleetExecutor`: every
//! candidate applied on the server and the load client through each host's
//! journal (with the confirm deadline where a change can cut the path) and
//! rolled back after its runs.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ::fleet::executor::{server_address, Config, FleetExecutor};
use anyhow::Context;
use model::inventory::Host;
use model::plan::NetnsScope;
use runner::exec::HostId;

use super::{search_on, Run, Target};
use crate::exit;

/// `--timeout` default, seconds (as `nettune fleet`).
const DEFAULT_TIMEOUT_S: f64 = 120.0;
/// Seconds a host waits for the confirm of a change that can cut the path
/// (as `fleet apply`'s `--confirm-timeout`).
const CONFIRM_S: u32 = 60;

/// The one host `pattern` names (`--server`), or the first of those it
/// names that is not `other` (`--clients`).
fn pick<'a>(
    inv: &'a model::inventory::Inventory,
    inv_path: &Path,
    pattern: &str,
    flag: &str,
    other: Option<&str>,
) -> anyhow::Result<&'a Host> {
    let hosts = model::inventory::select(inv, pattern)
        .map_err(|e| anyhow::anyhow!("{flag} {pattern:?}: {e}"))?;
    let hosts: Vec<&Host> = hosts
        .into_iter()
        .filter(|h| Some(h.name.as_str()) != other)
        .collect();
    match (hosts.as_slice(), other) {
        ([], _) => anyhow::bail!(
            "{flag} {pattern:?} names no host of {}{}",
            inv_path.display(),
            if other.is_some() {
                " besides the server"
            } else {
                ""
            }
        ),
        ([h], _) | ([h, ..], Some(_)) => Ok(h),
        (many, None) => anyhow::bail!(
            "{flag} {pattern:?} names {} hosts of {}; the search needs one server",
            many.len(),
            inv_path.display()
        ),
    }
}

/// Connect the server's and the client's agents and search.
pub(super) fn search(run: &Run<'_>, inv_path: &Path) -> anyhow::Result<ExitCode> {
    let args = run.args;
    let inv = model::inventory::load(inv_path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let server = pick(
        &inv,
        inv_path,
        args.server.as_deref().unwrap_or_default(),
        "--server",
        None,
    )?;
    let client = pick(
        &inv,
        inv_path,
        args.clients.as_deref().unwrap_or_default(),
        "--clients",
        Some(server.name.as_str()),
    )?;
    let (root_t, state_t) = (
        args.root_template.as_deref(),
        args.state_dir_template.as_deref(),
    );
    let jobs = [server, client]
        .iter()
        .map(|h| crate::cmd::fleet::jobs::job(h, root_t, state_t))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let cfg = Config {
        opts: ::fleet::fanout::Options {
            parallel: 2,
            deadline: Duration::from_secs_f64(args.timeout.unwrap_or(DEFAULT_TIMEOUT_S)),
            copy: !args.no_copy,
            version: env!("CARGO_PKG_VERSION").to_string(),
            exe: std::env::current_exe().context("finding the nettune binary")?,
        },
        confirm_within: Some(CONFIRM_S),
        // A fresh token: the server serves this search's client only.
        token: Some(engine::auth::nonce()),
    };
    let (srv, cli) = (HostId(0), HostId(1));
    let mut exec = FleetExecutor::new(jobs, cfg);
    exec.route(
        cli,
        srv,
        server_address(&inv, client.name.as_str(), server.name.as_str(), true, None),
    );
    let failed = exec.connect_all();
    if !failed.is_empty() {
        for (host, why) in &failed {
            eprintln!(
                "nettune: autotune: {} failed: {}",
                model::text::printable_capped(host, 64),
                model::text::printable_capped(&why.message, 2000)
            );
        }
        anyhow::bail!(
            "{} of 2 host(s) could not be reached; nothing was applied",
            failed.len()
        );
    }
    run.ui.line(&format!(
        "autotune on {} (server) and {} (load client) of {}, through their agents",
        model::text::printable_capped(server.name.as_str(), 64),
        model::text::printable_capped(client.name.as_str(), 64),
        inv_path.display()
    ));
    let target = Target {
        client: cli,
        server: srv,
        scope: NetnsScope::Init,
        sources: Vec::new(),
        host_label: format!("{}, through its agent", client.name.as_str()),
    };
    let result = search_on(&mut exec, target, run);
    if let Some(k) = run.kept.borrow_mut().as_mut() {
        if let Err(e) = k.undo(&mut exec) {
            eprintln!("nettune: rolling back the --from setting: {e}");
        }
    }
    let lost = exec.lost();
    if lost.is_empty() {
        return result;
    }
    if let Err(e) = &result {
        eprintln!("nettune: {e:#}");
    }
    for l in &lost {
        eprintln!(
            "nettune: autotune: host {} was lost ({}); {}",
            model::text::printable_capped(&l.host, 64),
            model::text::printable_capped(&l.reason, 500),
            crate::cmd::experiment::on_fleet::rollback_line(l, inv_path, root_t, state_t)
        );
    }
    Ok(ExitCode::from(exit::ERROR))
}
