//! Lenient readers of the JSON parts of a results file that belong to other
//! commands (plans, host facts), doctor's typed reports as shown, and
//! helpers over runs. Whatever does not have the expected shape is skipped,
//! never a panic.

use model::findings::{Finding, HostReports, OnHost};
use model::results::{CellResult, RunRecord};
use serde_json::Value;

/// At most this many findings per report, changes per plan, rows per table.
pub(crate) const MAX_ROWS: usize = 2000;
/// Workloads considered (names in file order, then any the runs name).
pub(crate) const MAX_WORKLOADS: usize = 64;
/// Metrics considered for ordering.
pub(crate) const MAX_METRICS: usize = 16;
/// Plans and hosts shown.
pub(crate) const MAX_SECTIONS: usize = 64;
/// Host facts shown per host, in bytes of pretty JSON.
pub(crate) const MAX_FACTS_BYTES: usize = 64 * 1024;

/// A string field: strings as is, numbers and booleans as text, else empty.
pub(crate) fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// The findings of doctor's reports, at most [`MAX_ROWS`].
pub(crate) fn findings(reports: &HostReports) -> &[OnHost<Finding>] {
    &reports.findings[..reports.findings.len().min(MAX_ROWS)]
}

/// A finding's subject as shown: `HOST: SUBJECT` when it names its host.
pub(crate) fn subject(f: &OnHost<Finding>) -> String {
    match &f.host {
        Some(host) => format!("{host}: {}", f.item.subject),
        None => f.item.subject.clone(),
    }
}

/// One change of a plan, as shown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub knob: String,
    pub target: String,
    pub before: String,
    pub after: String,
    pub rule: String,
    pub reason: String,
}

/// What a plan change's `target` names, in a few words.
fn target_text(t: &Value) -> String {
    match text(t, "kind").as_str() {
        "file" | "created" => text(t, "path"),
        "irq_affinity" => format!("IRQ {} ({})", text(t, "irq"), text(t, "iface")),
        "ethtool" => format!(
            "{} {} {}",
            text(t, "iface"),
            text(t, "group"),
            text(t, "attr")
        ),
        "service" => text(t, "name"),
        "module_param" => format!("{}.{}", text(t, "module"), text(t, "param")),
        other => other.to_owned(),
    }
}

/// The changes of a plan (`nettune plan --json`), or of a bare list of changes.
pub(crate) fn changes(plan: &Value) -> Vec<Change> {
    let list = plan
        .get("changes")
        .and_then(Value::as_array)
        .or_else(|| plan.as_array());
    let Some(list) = list else {
        return Vec::new();
    };
    list.iter()
        .filter(|c| c.is_object())
        .take(MAX_ROWS)
        .map(|c| Change {
            knob: text(c, "knob"),
            target: c.get("target").map(target_text).unwrap_or_default(),
            before: text(c, "before"),
            after: text(c, "after"),
            rule: text(c, "rule"),
            reason: text(c, "reason"),
        })
        .collect()
}

/// Host facts as pretty JSON, cut at [`MAX_FACTS_BYTES`] while it is
/// written: memory stays bounded by the cap, not by the size of the pretty
/// form (a deeply nested array in an 8 MB results.json printed to 1 GB).
pub(crate) fn facts_text(v: &Value) -> String {
    let mut w = Capped::new(MAX_FACTS_BYTES);
    // An error here is the cap being reached (or nothing to write).
    let _ = serde_json::to_writer_pretty(&mut w, v);
    let cut = w.cut;
    let text = w.into_text();
    if cut {
        format!("{text}\n… (cut at {MAX_FACTS_BYTES} bytes)")
    } else {
        text
    }
}

/// A writer that keeps the first `cap` bytes and then refuses more, so the
/// serializer stops: memory is bounded by `cap` whatever is written.
#[derive(Debug)]
pub(crate) struct Capped {
    buf: Vec<u8>,
    cap: usize,
    /// Whether bytes were refused.
    pub cut: bool,
}

impl Capped {
    /// An empty writer keeping at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Capped {
        Capped {
            buf: Vec::new(),
            cap,
            cut: false,
        }
    }

    /// The bytes kept, as text cut back to a whole UTF-8 character.
    pub(crate) fn into_text(self) -> String {
        match String::from_utf8(self.buf) {
            Ok(s) => s,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).unwrap_or_default()
            }
        }
    }
}

impl std::io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.buf.len());
        if room == 0 && !b.is_empty() {
            self.cut = true;
            return Err(std::io::Error::other("cap reached"));
        }
        let n = b.len().min(room);
        self.buf.extend_from_slice(&b[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod capped_tests {
    use super::*;

    /// Cut at the cap, on a character boundary, with the note.
    #[test]
    fn facts_stop_at_the_cap() {
        let deep = (0..100).fold(Value::Array(vec![Value::from(0); 200_000]), |v, _| {
            Value::Array(vec![v])
        });
        let t = facts_text(&deep);
        assert!(t.len() <= MAX_FACTS_BYTES + 64, "{}", t.len());
        assert!(t.ends_with("(cut at 65536 bytes)"));
        let small = serde_json::json!({"a": [1, 2], "é": "ü"});
        assert_eq!(
            facts_text(&small),
            serde_json::to_string_pretty(&small).unwrap()
        );
        let mut w = Capped::new(3);
        let _ = std::io::Write::write_all(&mut w, "aé".as_bytes());
        let _ = std::io::Write::write_all(&mut w, b"x");
        assert!(w.cut);
        assert_eq!(w.into_text(), "aé");
    }
}

/// The measured (not warm-up) runs of `workload` in `cell`.
pub(crate) fn measured<'a>(
    cell: &'a CellResult,
    workload: &'a str,
) -> impl Iterator<Item = &'a RunRecord> + 'a {
    cell.runs
        .iter()
        .filter(move |r| !r.warmup && r.workload == workload)
}

/// Workload names in file order, then any others the runs name, without
/// duplicates, at most `max`.
pub(crate) fn workload_names(r: &model::results::ExperimentResults, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let named = r.workloads.iter().map(|w| w.name.as_str());
    let in_runs = r
        .cells
        .iter()
        .flat_map(|c| c.runs.iter().map(|r| r.workload.as_str()));
    let in_stats = r
        .cells
        .iter()
        .flat_map(|c| c.stats.iter().map(|s| s.workload.as_str()));
    for name in named.chain(in_stats).chain(in_runs) {
        if out.len() >= max {
            break;
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}

/// Keep at most `max` points of `pts`, evenly spaced, always the last.
pub(crate) fn decimate<T: Copy>(pts: &[T], max: usize) -> Vec<T> {
    if pts.len() <= max {
        return pts.to_vec();
    }
    if max < 2 {
        return pts.last().copied().into_iter().collect();
    }
    let stride = pts.len().div_ceil(max - 1);
    let mut out: Vec<T> = pts.iter().step_by(stride).copied().collect();
    if let Some(&last) = pts.last() {
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_finding_shows_its_host_before_its_subject_and_rows_are_capped() {
        use model::findings::{FindingId, Report, Severity};
        let f = Finding::new(FindingId::RpsOff, Severity::Info, "eth0", "t".into());
        let report = Report {
            schema_version: 1,
            findings: vec![f; MAX_ROWS + 1],
            skipped: Vec::new(),
        };
        let r = HostReports::merge(&[("client".into(), report)]);
        assert_eq!(findings(&r).len(), MAX_ROWS);
        assert_eq!(subject(&r.findings[0]), "client: eth0");
    }

    #[test]
    fn reads_plan_changes() {
        let plan = json!({"changes": [{"knob": "rps_cpus", "target": {"kind": "irq_affinity", "irq": 60, "iface": "eth1"}, "before": "0", "after": "1", "rule": "rps", "reason": "r"}]});
        let c = changes(&plan);
        assert_eq!(c[0].target, "IRQ 60 (eth1)");
        assert!(changes(&json!(null)).is_empty());
    }

    #[test]
    fn decimates_to_the_cap_and_keeps_the_last() {
        let v: Vec<u32> = (0..10_000).collect();
        let d = decimate(&v, 100);
        assert!(d.len() <= 101, "{}", d.len());
        assert_eq!(d.last(), Some(&9999));
        assert_eq!(decimate(&v[..3], 100), vec![0, 1, 2]);
        assert!(decimate::<u32>(&[], 100).is_empty());
    }
}
