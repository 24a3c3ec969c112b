//! The fleet summary: a table of hosts for people, and what the exit
//! status must say (failed hosts, drift, doctor's worst finding).

use crate::ops::{HostReport, Outcome};
use model::text::printable_capped;

/// Characters of an error shown in the table (the JSON has it whole).
const ERROR_SHOWN: usize = 200;

/// What a fleet run ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Hosts that failed, in inventory order.
    pub failed: Vec<String>,
    /// Some host drifted (`verify`).
    pub drift: bool,
    /// The highest exit status the command gave on a host that did not fail
    /// (`doctor`: 0, 1 or 2 by its worst finding).
    pub worst_code: u8,
}

/// The verdict of `reports`.
pub fn verdict(reports: &[HostReport]) -> Verdict {
    Verdict {
        failed: reports
            .iter()
            .filter(|r| r.outcome.failed())
            .map(|r| r.host.clone())
            .collect(),
        drift: reports.iter().any(|r| r.outcome == Outcome::Drift),
        worst_code: reports
            .iter()
            .filter(|r| !r.outcome.failed())
            .filter_map(|r| r.code)
            .max()
            .unwrap_or(0),
    }
}

/// `apply`: each host's changes, checked before they were sent, as
/// `HOST: N change(s)[, K already set]` and one indented line per change.
pub fn changes(reports: &[HostReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let Some(c) = &r.changes else { continue };
        let already = c.iter().filter(|l| crate::is_already(l)).count();
        let set = if already > 0 {
            format!(", {already} already set")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}: {} change(s){set}\n",
            printable_capped(&r.host, 64),
            c.len().saturating_sub(already)
        ));
        for line in c {
            out.push_str(&format!("  {}\n", printable_capped(line, 400)));
        }
    }
    out
}

/// The table: host, outcome, findings (`C/W/I`), drifted knobs, error.
pub fn table(reports: &[HostReport]) -> String {
    let head = ["HOST", "OUTCOME", "FINDINGS C/W/I", "DRIFTED", "ERROR"];
    let rows: Vec<[String; 5]> = reports
        .iter()
        .map(|r| {
            [
                printable_capped(&r.host, 64),
                r.outcome.word().to_string(),
                r.findings
                    .map(|f| format!("{}/{}/{}", f.critical, f.warning, f.info))
                    .unwrap_or_else(|| "-".into()),
                match &r.drifted {
                    Some(d) if !d.is_empty() => printable_capped(&d.join(", "), 120),
                    Some(_) => "0".into(),
                    None => "-".into(),
                },
                r.error
                    .as_ref()
                    .map(|e| printable_capped(&e.message, ERROR_SHOWN))
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let mut width = head.map(|h| h.chars().count());
    for row in &rows {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 5]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(width).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(head);
    out.push('\n');
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        out.push('\n');
    }
    let v = verdict(reports);
    out.push_str(&format!(
        "{} host(s): {} ok, {} failed",
        reports.len(),
        reports.len().saturating_sub(v.failed.len()),
        v.failed.len()
    ));
    if !v.failed.is_empty() {
        out.push_str(&format!(" ({})", v.failed.join(", ")));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fanout::Failure;
    use crate::ops::Findings;

    fn rep(host: &str, outcome: Outcome) -> HostReport {
        HostReport::local(host, outcome, 0)
    }

    #[test]
    fn the_table_names_failed_hosts_and_the_verdict_counts_them() {
        let mut a = rep("a", Outcome::Ok);
        a.findings = Some(Findings {
            critical: 1,
            warning: 2,
            info: 0,
        });
        a.code = Some(2);
        let mut b = rep("b", Outcome::RolledBack);
        b.error = Some(Failure {
            kind: "remote",
            message: "local: apply: write failed".into(),
        });
        b.code = None;
        let t = table(&[a.clone(), b.clone()]);
        assert!(t.contains("1/2/0"), "{t}");
        assert!(t.contains("failed, rolled back"), "{t}");
        assert!(t.ends_with("2 host(s): 1 ok, 1 failed (b)\n"), "{t}");
        let v = verdict(&[a, b]);
        assert_eq!(v.failed, vec!["b".to_string()]);
        assert_eq!(v.worst_code, 2);
        assert!(!v.drift);
    }
}
