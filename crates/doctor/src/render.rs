//! The human text of a [`Report`]: grouped by severity, each finding's
//! evidence and fix indented under it, skipped rules last. Text that came
//! from the host (interface or IRQ names) is shown with control characters
//! escaped.

use crate::finding::{Finding, Report, Severity};
use std::fmt::Write;

/// `s` with control characters escaped (an interface name or a fixture's
/// text cannot move the cursor): the one shared escaping.
use model::text::printable as visible;

/// The one-line summary (`2 warnings, 1 info; 3 rules skipped`).
pub fn summary(r: &Report) -> String {
    r.summary()
}

/// The full human report, after a `header` line.
pub fn human(header: &str, r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}", visible(header));
    let _ = writeln!(o, "{}", summary(r));
    for sev in [Severity::Critical, Severity::Warning, Severity::Info] {
        let group: Vec<&Finding> = r.findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(o, "\n{}", sev.as_str().to_uppercase());
        for f in group {
            finding(&mut o, f);
        }
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(o, "\nSKIPPED");
        for s in &r.skipped {
            let _ = writeln!(o, "  {}: {}", s.id, visible(&s.reason));
        }
    }
    o
}

fn finding(o: &mut String, f: &Finding) {
    let _ = writeln!(
        o,
        "  {} [{}] {}",
        f.id,
        visible(&f.subject),
        visible(&f.title)
    );
    if !f.evidence.is_empty() {
        let _ = writeln!(o, "    evidence:");
        let w = f
            .evidence
            .iter()
            .map(|e| e.what.chars().count())
            .max()
            .unwrap_or(0)
            .min(40);
        for e in &f.evidence {
            let _ = writeln!(
                o,
                "      {:<w$}  {}  ({})",
                visible(&e.what),
                visible(&e.value),
                visible(&e.source)
            );
        }
    }
    let _ = writeln!(o, "    why: {}", visible(&f.why));
    let _ = writeln!(o, "    fix: {}", visible(&f.fix.text));
    if let Some(c) = &f.fix.command {
        let _ = writeln!(o, "      $ {}", visible(c));
    }
    for c in &f.fix.changes {
        let _ = writeln!(
            o,
            "      {}: {} -> {}  [{}]",
            visible(&c.target.describe()),
            visible(c.before.as_deref().unwrap_or("?")),
            visible(&c.after),
            c.rule
        );
    }
    if let Some(a) = &f.fix.app {
        let _ = writeln!(o, "      application: {}", visible(a));
    }
    let _ = writeln!(o, "    source: {}", visible(&f.source));
}
