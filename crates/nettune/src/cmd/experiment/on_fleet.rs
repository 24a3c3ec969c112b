//! `nettune experiment FILE` with `[hosts.fleet]`: the lab's runner on a
//! fleet's hosts (docs/fleet.md, "Experiments on a fleet"). The inventory's
//! roles give the server and the clients; every one of them gets an agent
//! session (`fleet::executor::FleetExecutor`); the cell's levels are
//! applied on the server and every client through each host's journal and
//! rolled back per cell; every client loads the server at once in each run
//! (`fleet bench`'s synchronized start), their results merged into one.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ::fleet::executor::{server_address, Config, FleetExecutor, LostHost};
use anyhow::Context;
use model::experiment::{Experiment, FleetHosts};
use model::plan::NetnsScope;
use runner::exec::{Executor, HostId};
use runner::{self, experiment as rx, RunError, RunOptions};

use super::{confirm, finish, fleet_inventory_path, prepare, schedule_runs, show, Args};
use crate::cmd::present::Ui;
use crate::exit;

/// `--parallel` of `nettune fleet`.
const DEFAULT_PARALLEL: usize = 16;
/// `--timeout` of `nettune fleet`, seconds.
const DEFAULT_TIMEOUT_S: f64 = 120.0;
/// `--confirm-timeout` of `nettune fleet apply`, seconds.
const DEFAULT_CONFIRM_S: u32 = 60;

/// Run the experiment on the hosts `f` names.
pub(super) fn run(
    args: &Args,
    exp: Experiment,
    text: String,
    f: &FleetHosts,
) -> anyhow::Result<ExitCode> {
    let inv_path = fleet_inventory_path(&args.file, f);
    let inv = model::inventory::load(&inv_path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let roles = f
        .resolve(&inv)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    roles
        .check_factor_hosts(&exp)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    if roles.clients.is_empty() {
        anyhow::bail!(
            "{}: hosts.fleet.clients {:?} names no host",
            args.file.display(),
            f.clients
        );
    }
    // Host 0 the server, then the clients (all of them run the load).
    let hosts: Vec<&model::inventory::Host> = std::iter::once(&roles.server)
        .chain(&roles.clients)
        .collect();
    let jobs = hosts
        .iter()
        .map(|h| {
            crate::cmd::fleet::jobs::job(
                h,
                args.root_template.as_deref(),
                args.state_dir_template.as_deref(),
            )
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Err(code) = confirm(&exp, args.until_ci, args.yes) {
        return Ok(code);
    }
    let (server, client) = (HostId(0), HostId(1));
    let timeout = args.timeout.unwrap_or(DEFAULT_TIMEOUT_S);
    let cfg = Config {
        opts: ::fleet::fanout::Options {
            parallel: args.parallel.unwrap_or(DEFAULT_PARALLEL),
            deadline: Duration::from_secs_f64(timeout),
            copy: !args.no_copy,
            version: env!("CARGO_PKG_VERSION").to_string(),
            exe: std::env::current_exe().context("finding the nettune binary")?,
        },
        confirm_within: Some(args.confirm_timeout.unwrap_or(DEFAULT_CONFIRM_S)).filter(|s| *s > 0),
        // A fresh token per run: the server serves this run's client only.
        token: Some(engine::auth::nonce()),
    };
    let mut exec = FleetExecutor::new(jobs, cfg);
    for (i, c) in roles.clients.iter().enumerate() {
        exec.route(
            HostId(i + 1),
            server,
            server_address(
                &inv,
                c.name.as_str(),
                roles.server.name.as_str(),
                true,
                None,
            ),
        );
    }
    exec.load_from((1..hosts.len()).map(HostId).collect());
    let failed = exec.connect_all();
    if !failed.is_empty() {
        for (host, why) in &failed {
            eprintln!(
                "nettune: experiment: {} failed: {}",
                model::text::printable_capped(host, 64),
                model::text::printable_capped(&why.message, 2000)
            );
        }
        anyhow::bail!(
            "{}: {} of {} host(s) could not be reached; nothing was applied",
            args.file.display(),
            failed.len(),
            hosts.len()
        );
    }

    let (dir, mut results) = prepare(args, &exp, &text)?;
    let cancel = engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?;
    if results.machine.hostname.is_empty() {
        if let Ok(snap) = exec.inspect(server) {
            results.machine = rx::machine_of(&snap);
        }
    }
    for n in notes(f, &inv_path, &roles) {
        let n = model::results::Note::from(n);
        if !results.notes.contains(&n) {
            results.notes.push(n);
        }
    }
    let mut schedule = rx::schedule(&exp, client, server, args.until_ci);
    schedule.bootstrap.min_effect_pct = args.min_effect;
    // The load client first: its cell plan's bench options are the run's.
    // Each host answers to its role and name in `[[factor]] hosts`
    // (scope_names: the server, then the clients, as `hosts`).
    let names = roles.scope_names();
    let setup_hosts: Vec<(HostId, Vec<String>)> = std::iter::once(client)
        .chain(std::iter::once(server))
        .chain((2..hosts.len()).map(HostId))
        .map(|h| (h, names.get(h.0).cloned().unwrap_or_default()))
        .collect();
    let mut setup = rx::ExperimentSetup::named(exp.clone(), setup_hosts, NetnsScope::Init);
    let opts = RunOptions {
        out_dir: dir.clone(),
        experiment_text: Some(text),
        cancel,
    };
    let mut progress = Ui::new(schedule_runs(&exp, results.cells.len()), !args.json);
    let outcome = runner::run(
        &mut results,
        &schedule,
        &mut exec,
        &mut setup,
        &opts,
        &mut progress,
    );
    progress.finish();
    let lost = exec.lost();
    drop(exec);
    match outcome {
        Ok(o) => finish(args, &dir, &results, o),
        Err(e @ RunError::HostLost { .. }) => {
            show(args, &dir, &results)?;
            eprintln!("nettune: {e}");
            for l in &lost {
                eprintln!("nettune: {}", lost_line(l, &inv_path, args));
            }
            eprintln!(
                "nettune: the runs so far are in {}; once every host is back, continue with: nettune experiment {} --resume {}",
                dir.join(model::results::RESULTS_FILE).display(),
                args.file.display(),
                dir.display()
            );
            Ok(ExitCode::from(exit::ERROR))
        }
        Err(e) => Err(e.into()),
    }
}

/// What results.json says about the hosts of the run.
fn notes(f: &FleetHosts, inv: &Path, roles: &model::experiment::FleetRoles) -> Vec<String> {
    let clients: Vec<&str> = roles.clients.iter().map(|h| h.name.as_str()).collect();
    let mut n = vec![format!(
        "fleet {}: server {}, clients {}; the levels are applied on the server and every client (a factor with `hosts` only on the hosts it names), each through its own journal; {}",
        inv.display(),
        roles.server.name,
        clients.join(", "),
        if clients.len() > 1 {
            "every client loads the server at once in each run (fleet bench's synchronized start) and the run's result is their sum (each run's bench JSON names every client's share and the start skew)"
        } else {
            "the client runs each bench against the server"
        },
    )];
    if let Some(p) = &roles.probe {
        n.push(format!(
            "hosts.fleet.probe {} is not used yet: a [responses.probe] runs from {}",
            p.name,
            if clients.len() > 1 {
                "every load client beside its load (the first client's probe is recorded)"
            } else {
                "the load client"
            }
        ));
    }
    if f.limit.is_some() {
        n.push(format!(
            "hosts.fleet.limit {:?} was applied to the inventory first",
            f.limit.as_deref().unwrap_or_default()
        ));
    }
    n
}

/// The line naming a lost host, what stays applied there and how to roll
/// it back.
fn lost_line(l: &LostHost, inv: &Path, args: &Args) -> String {
    rollback_line(
        l,
        inv,
        args.root_template.as_deref(),
        args.state_dir_template.as_deref(),
    )
}

/// [`lost_line`] with the templates given: also `autotune --inventory`'s.
pub(crate) fn rollback_line(
    l: &LostHost,
    inv: &Path,
    root_template: Option<&str>,
    state_dir_template: Option<&str>,
) -> String {
    let host = model::text::printable_capped(&l.host, 64);
    match l.generation {
        None => format!("{host}: nothing this run applied there is in force"),
        Some(g) => {
            // Every word quoted for the shell (a host `db1;reboot` or `web*`
            // must not run or glob when the line is pasted), then escaped
            // for the terminal.
            let word = crate::cmd::apply::shell_word;
            let mut cmd = format!(
                "nettune fleet rollback --inventory {} --limit {} --to {g}",
                word(&inv.display().to_string()),
                word(&l.host)
            );
            if let Some(t) = root_template {
                cmd.push_str(&format!(" --root-template {}", word(t)));
            }
            if let Some(t) = state_dir_template {
                cmd.push_str(&format!(" --state-dir-template {}", word(t)));
            }
            let cmd = model::text::printable_capped(&cmd, 4096);
            format!(
                "{host}: generation {g} (and any newer) stays applied there; once it is reachable, roll it back with: {cmd}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35: the printed command is one shell word per argument.
    #[test]
    fn the_lost_host_command_is_shell_quoted() {
        for (host, quoted) in [
            ("db1;reboot", "'db1;reboot'"),
            ("web*", "'web*'"),
            ("it's", "'it'\\''s'"),
        ] {
            let l = LostHost {
                host: host.into(),
                reason: "gone".into(),
                generation: Some(3),
            };
            let line = rollback_line(&l, Path::new("my hosts.toml"), Some("/r/{host}"), None);
            assert!(
                line.ends_with(&format!(
                    "nettune fleet rollback --inventory 'my hosts.toml' --limit {quoted} --to 3 --root-template '/r/{{host}}'"
                )),
                "{line}"
            );
        }
    }
}
