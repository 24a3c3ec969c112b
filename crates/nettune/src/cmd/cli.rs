//! Argument definitions (clap derive). Each subcommand's flags live in its module.

use crate::cmd;
use clap::{Parser, Subcommand};

const EXAMPLES: &str = "\
Examples:
  nettune inspect                               this host: CPUs, NICs, queues, IRQs
  nettune plan --profile throughput             what the profile would change here
  nettune apply --profile throughput --yes      apply it, journaled
  nettune verify                                drift since (exit 3 on drift)
  nettune serve                                 on host B, then on host A:
  nettune bench B --test tcp-rr
  nettune fleet verify --inventory hosts.toml   the same on every host of an inventory
  nettune completions bash > /etc/bash_completion.d/nettune

Exit codes: 0 success, 1 error, 2 usage error, 3 drift (verify), 4 some host
failed (fleet), 5 knob absent (apply), 6 needs root (apply), 130 interrupted
(bench); see EXIT STATUS in nettune(1).
`man nettune-COMMAND` or `nettune COMMAND --help` for each command (`nettune man
--out DIR` writes the pages without the package); the reference (JSON shapes,
rules, lab) is in /usr/share/doc/nettune/docs, or in a source checkout the
repository's docs directory.";

/// Measure, explain, tune and prove a Linux host's network path.
#[derive(Debug, Parser)]
#[command(name = "nettune", version, about, long_about = None, propagate_version = true)]
#[command(after_help = EXAMPLES)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// All subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show CPUs, NUMA nodes, NICs, queues, IRQs and their CPUs (a host snapshot).
    Inspect(cmd::inspect::Args),
    /// Record this host's /sys, /proc and ethtool state into a directory for --root.
    Capture(cmd::capture::Args),
    /// Per-CPU and per-NIC counters each interval, like mpstat + /proc/interrupts + softnet.
    Stat(cmd::stat::Args),
    /// Drops per second by the kernel's own reason, location and protocol (skb:kfree_skb).
    Drops(cmd::drops::Args),
    /// Live terminal view: CPU bars, NIC queues as a heat map, softnet, findings.
    Top(cmd::top::Args),
    /// Run the traffic server (and agent) that `nettune bench` talks to.
    Serve(cmd::serve::Args),
    /// Measure throughput, packet rate, request/response latency or connection rate.
    Bench(cmd::bench::Args),
    /// Compute a tuning plan for a profile and show it as a diff.
    Plan(cmd::plan::Args),
    /// Apply a plan, journaling every original value so it can be rolled back.
    Apply(cmd::apply::Args),
    /// Restore values from the journal, newest generation first.
    Rollback(cmd::rollback::Args),
    /// Report drift between the last applied plan and the host now.
    Verify(cmd::verify::Args),
    /// List applies and rollbacks recorded in the journal.
    History(cmd::history::Args),
    /// List profiles, show what one would change here, or say which is applied now.
    Profile(cmd::profile::Args),
    /// Diagnose the host: findings with evidence and fixes, from a snapshot and sampled counters.
    Doctor(cmd::doctor::Args),
    /// Run a factorial experiment in a lab of namespaces: repeats, 95 % CIs, verdicts, rollback.
    Experiment(cmd::experiment::Args),
    /// The whole loop in namespaces: baseline, doctor, its plan applied, again, rollback, a before/after table.
    Lab(cmd::lab::Args),
    /// Search the lab host's knobs for an objective: each candidate applied, measured on 95 % intervals, rolled back; the proven plan kept.
    Autotune(cmd::autotune::Args),
    /// Render a results directory (results.json) as an HTML page with charts and a Markdown summary.
    Report(cmd::report::Args),
    /// Run inspect, doctor, plan, apply, rollback, verify, history or bench on the hosts of an inventory.
    Fleet(cmd::fleet::Args),
    /// Boot QEMU guests with a real NIC driver (e1000, e1000e, vmxnet3, virtio-net), joined to one server, and write their inventory.
    Guest(cmd::guest::Args),
    /// Print a shell completion script (bash, zsh, fish).
    Completions(cmd::completions::Args),
    /// Serve the agent protocol on stdin/stdout for a fleet controller (ssh, kubectl, ip netns exec).
    #[command(hide = true)]
    Agent(cmd::agent::Args),
    /// Write man pages generated from these definitions into a directory.
    Man(cmd::man::Args),
}
