//! The drops pane: drops per second by the kernel's reason over the last
//! interval (the `skb:kfree_skb` watcher of `nettune drops`), the largest
//! few, or the one line saying why the watcher is off.

use model::drops::DropInterval;

/// Reasons shown.
pub const TOP: usize = 3;

/// What the drops pane shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum DropsPane {
    /// The watcher runs; no interval yet.
    #[default]
    Waiting,
    /// The watcher could not run (not root, no tracefs, a replayed capture
    /// without drops): the reason, one line.
    Off(String),
    /// The last interval.
    Seen {
        /// Every drop per second (exact).
        per_sec: f64,
        /// Whether the rows are exact counts (else sampled shares).
        exact: bool,
        /// The largest reasons, per second, at most [`TOP`].
        top: Vec<(String, f64)>,
        /// Reasons beyond those.
        more: usize,
    },
}

impl DropsPane {
    /// The pane of one interval.
    pub fn of(i: &DropInterval) -> DropsPane {
        DropsPane::Seen {
            per_sec: i.per_sec,
            exact: i.exact,
            top: i
                .reasons
                .iter()
                .take(TOP)
                .map(|r| (r.name.clone(), r.per_sec))
                .collect(),
            more: i.reasons.len().saturating_sub(TOP),
        }
    }

    /// The pane's text.
    pub fn line(&self) -> String {
        match self {
            DropsPane::Waiting => "Drops by reason: waiting for the first interval".into(),
            DropsPane::Off(why) => format!(
                "Drops by reason: off ({})",
                why.trim_start_matches("drops by reason: ")
            ),
            DropsPane::Seen { per_sec, .. } if *per_sec == 0.0 => {
                "Drops by reason: none in the last interval".into()
            }
            DropsPane::Seen {
                per_sec,
                exact,
                top,
                more,
            } => {
                let mark = if *exact { "" } else { "~" };
                let mut s = format!("Drops by reason: {}", model::metric::fmt_per_sec(*per_sec));
                for (i, (name, r)) in top.iter().enumerate() {
                    s.push_str(if i == 0 { "  " } else { ", " });
                    s.push_str(&format!("{name} {mark}{}", model::metric::fmt_per_sec(*r)));
                }
                if *more > 0 {
                    s.push_str(&format!(", {more} more"));
                }
                s
            }
        }
    }
}
