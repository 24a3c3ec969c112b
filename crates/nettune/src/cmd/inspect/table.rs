//! Small text helpers of the human view: a CPU list or a word, an optional
//! value or `?`, and a left-aligned table.

use model::CpuSet;
use std::fmt::Write as _;

pub(super) fn list_or(s: &CpuSet, empty: &str) -> String {
    if s.is_empty() {
        empty.to_string()
    } else {
        s.to_list()
    }
}

pub(super) fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("?".to_string(), |v| v.to_string())
}

/// A left-aligned text table; the last column is not padded.
pub(super) struct Table {
    pub(super) rows: Vec<Vec<String>>,
}

impl Table {
    pub(super) fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }
    pub(super) fn row(&mut self, r: Vec<String>) {
        self.rows.push(r);
    }
    pub(super) fn render(&self, indent: &str) -> String {
        let n = self.rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut w = vec![0; n];
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in &self.rows {
            let mut line = indent.to_string();
            for (i, c) in r.iter().enumerate() {
                if i + 1 == r.len() {
                    line.push_str(c);
                } else {
                    let _ = write!(line, "{c:<width$}  ", width = w[i]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}
