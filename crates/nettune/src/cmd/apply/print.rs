//! What `nettune apply` prints: the report of each change, and what to do
//! after an apply that stopped at a channel change.

use super::{shell_word, Args};
use host::apply::{ApplyReport, Outcome, Stopped};
use host::journal::StateDir;
use model::plan::Plan;

/// What to do after an apply stopped at a channel change.
pub(super) fn stopped_message(args: &Args, plan: &Plan, s: &Stopped) -> String {
    format!(
        "stopped after the channel change ({}): the remaining {} change(s) of {} were planned for the old queues and IRQ numbers and were not applied. Make a new plan now (`nettune plan --profile {}{} --json`) and apply it, or apply the file with --replan to re-plan them after the channel change",
        s.after,
        s.remaining,
        args.plan
            .as_deref()
            .map_or_else(|| "the plan".into(), |p| p.display().to_string()),
        shell_word(&plan.profile),
        if args.journal.root.as_os_str() == "/" {
            String::new()
        } else {
            format!(
                " --root {}",
                shell_word(&args.journal.root.to_string_lossy())
            )
        }
    )
}

/// One line per change, then the generation and how to undo it.
pub(super) fn print_report(args: &Args, state: &StateDir, to_apply: &Plan, report: &ApplyReport) {
    let mut n_applied = 0;
    let mut n_unch = 0;
    for c in &report.changes {
        let status = match &c.outcome {
            Outcome::Applied => {
                n_applied += 1;
                "applied".to_string()
            }
            Outcome::Unchanged => "already set".into(),
            Outcome::Unchangeable { error } => {
                n_unch += 1;
                format!("UNCHANGEABLE: {error}")
            }
            Outcome::Skipped { why } => format!("skipped: {why}"),
        };
        println!(
            "{:<12} {} = {}",
            status,
            model::text::printable(&c.target.to_string()),
            model::text::Printable(&c.after)
        );
        if let Some(n) = &c.note {
            println!("             note: {}", model::text::Printable(n));
        }
    }
    let mut undo = format!("nettune rollback {}", report.generation);
    if args.journal.root.as_os_str() != "/" {
        undo.push_str(" --root ");
        undo.push_str(&shell_word(&args.journal.root.to_string_lossy()));
    }
    if let Some(d) = &args.journal.state_dir {
        undo.push_str(" --state-dir ");
        undo.push_str(&shell_word(&d.to_string_lossy()));
    }
    println!(
        "\nGeneration {}: {n_applied} applied, {n_unch} unchangeable. Undo with `{undo}`.",
        report.generation,
    );
    if to_apply
        .changes
        .iter()
        .any(|c| matches!(c.target, model::plan::Target::ModuleParam { .. }))
    {
        println!(
            "Module parameter snippets{}: {}",
            if to_apply.options.reload_modules {
                ", loaded by reloading their modules"
            } else {
                " for review (not loaded; --allow-reload reloads the module)"
            },
            state.path().join("modprobe.d").display()
        );
    }
}
