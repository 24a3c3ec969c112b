//! The state of `nettune top` between frames, without I/O: the host
//! snapshot, the last deltas (the window the findings look at), the findings
//! board, the view, and the data frozen on screen. The event loop in
//! `cmd::top` feeds it deltas and keys and draws [`App::screen`].

use super::findings::{Board, BoardRow, FindingSource};
use super::keys::{Action, View};
use super::screen::{nic_names, queue_rates, Inputs, QueueRates, Screen};
use host::sampler::Delta;
use model::snapshot::HostSnapshot;
use ratatui::crossterm::event::KeyEvent;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many deltas the findings see (the last N intervals).
pub const WINDOW: usize = 5;

/// What one screen shows; copied aside when the screen is frozen.
#[derive(Debug, Clone)]
struct Shown {
    snapshot: Arc<HostSnapshot>,
    delta: Option<Delta>,
    queue_pps: QueueRates,
    findings: Vec<BoardRow>,
}

/// `nettune top`'s state.
#[derive(Debug)]
pub struct App {
    /// What the user chose.
    pub view: View,
    live: Shown,
    frozen: Option<Shown>,
    window: VecDeque<Delta>,
    board: Board,
    source: Box<dyn FindingSource>,
    ifaces: Vec<String>,
}

impl App {
    /// Start at monotonic time `now` on `snapshot`, showing only `ifaces`
    /// (all when empty), with findings from `source`.
    pub fn new(
        now: model::Nanos,
        snapshot: HostSnapshot,
        ifaces: Vec<String>,
        source: Box<dyn FindingSource>,
    ) -> App {
        let mut app = App {
            view: View::default(),
            live: Shown {
                snapshot: Arc::new(snapshot),
                delta: None,
                queue_pps: QueueRates::new(),
                findings: Vec::new(),
            },
            frozen: None,
            window: VecDeque::with_capacity(WINDOW),
            board: Board::default(),
            source,
            ifaces,
        };
        app.refresh_findings(now);
        app
    }

    fn refresh_findings(&mut self, now: model::Nanos) {
        let window: Vec<Delta> = self.window.iter().cloned().collect();
        let current = self.source.findings(&self.live.snapshot, &window);
        self.board.update(now, current);
        self.live.findings = self.board.rows();
    }

    /// A new interval: it becomes the live delta (with its per-queue packet
    /// rates) and joins the window; the findings run on the window.
    pub fn push(&mut self, delta: Delta) {
        let now = delta.at;
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(delta.clone());
        self.live.queue_pps = queue_rates(&delta);
        self.live.delta = Some(delta);
        self.refresh_findings(now);
    }

    /// A newer snapshot (IRQ affinities and queues change under irqbalance
    /// or `nettune apply`).
    pub fn set_snapshot(&mut self, s: HostSnapshot) {
        self.live.snapshot = Arc::new(s);
    }

    /// The deltas the findings see, oldest first.
    pub fn window(&self) -> impl Iterator<Item = &Delta> {
        self.window.iter()
    }

    fn shown(&self) -> &Shown {
        self.frozen.as_ref().unwrap_or(&self.live)
    }

    /// How many NICs the tab bar has now.
    pub fn nic_count(&self) -> usize {
        let s = self.shown();
        nic_names(&s.snapshot, s.delta.as_ref(), &self.ifaces).len()
    }

    /// Apply a key. Freezing keeps a copy of what is on screen; sorting and
    /// picking a NIC still work on the frozen copy.
    pub fn key(&mut self, k: KeyEvent) -> Action {
        let nics = self.nic_count();
        let a = self.view.on_key(k, nics);
        match (self.view.frozen, self.frozen.is_some()) {
            (true, false) => self.frozen = Some(self.live.clone()),
            (false, true) => self.frozen = None,
            _ => {}
        }
        a
    }

    /// The screen to draw now.
    pub fn screen(&self) -> Screen {
        let s = self.shown();
        Screen::build(
            &Inputs {
                snapshot: &s.snapshot,
                delta: s.delta.as_ref(),
                queue_pps: &s.queue_pps,
                findings: &s.findings,
                ifaces: &self.ifaces,
            },
            self.view,
        )
    }
}
