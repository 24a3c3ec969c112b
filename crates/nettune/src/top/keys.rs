//! The view state of `nettune top` and the keys that change it. A pure state
//! machine: tests feed it key events and look at the state.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// How the CPU and queue tables are ordered; `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// CPUs by id, queues by IRQ number.
    #[default]
    Id,
    /// CPUs by softirq %, queues by interrupts/s, highest first.
    Softirq,
    /// CPUs by busy % (100 − idle), queues by packets/s (interrupts/s where
    /// packets per queue are unknown), highest first.
    Busy,
}

impl SortKey {
    /// The next key in the cycle.
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Id => SortKey::Softirq,
            SortKey::Softirq => SortKey::Busy,
            SortKey::Busy => SortKey::Id,
        }
    }

    /// How the header names it.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Id => "id",
            SortKey::Softirq => "softirq (queues: irq/s)",
            SortKey::Busy => "busy (queues: pps)",
        }
    }
}

/// What the user chose: sort, NIC, frozen, help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct View {
    /// Order of the CPU and queue tables.
    pub sort: SortKey,
    /// Index of the NIC shown, into the screen's NIC list.
    pub nic: usize,
    /// The screen keeps the data it had when frozen.
    pub frozen: bool,
    /// The help overlay is shown.
    pub help: bool,
}

/// What the event loop does after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing changed.
    None,
    /// The view changed: draw again.
    Redraw,
    /// Leave.
    Quit,
}

impl View {
    /// Apply one key; `nics` is how many NICs there are to pick from.
    pub fn on_key(&mut self, key: KeyEvent, nics: usize) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => Action::Quit,
            KeyCode::Char('q') | KeyCode::Char('Q') => Action::Quit,
            KeyCode::Esc if self.help => {
                self.help = false;
                Action::Redraw
            }
            KeyCode::Esc => Action::Quit,
            KeyCode::Char('?') | KeyCode::Char('h') | KeyCode::F(1) => {
                self.help = !self.help;
                Action::Redraw
            }
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                Action::Redraw
            }
            KeyCode::Char('f') | KeyCode::Char(' ') => {
                self.frozen = !self.frozen;
                Action::Redraw
            }
            KeyCode::Tab | KeyCode::Right if nics > 0 => {
                self.nic = (self.nic.min(nics - 1) + 1) % nics;
                Action::Redraw
            }
            KeyCode::BackTab | KeyCode::Left if nics > 0 => {
                self.nic = (self.nic.min(nics - 1) + nics - 1) % nics;
                Action::Redraw
            }
            KeyCode::Char(c @ '1'..='9') => {
                let i = usize::from(c as u8 - b'1');
                if i < nics && i != self.nic {
                    self.nic = i;
                    Action::Redraw
                } else {
                    Action::None
                }
            }
            _ => Action::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(v: &mut View, code: KeyCode, nics: usize) -> Action {
        v.on_key(KeyEvent::new(code, KeyModifiers::NONE), nics)
    }

    #[test]
    fn quit_keys() {
        for code in [KeyCode::Char('q'), KeyCode::Esc] {
            assert_eq!(press(&mut View::default(), code, 2), Action::Quit);
        }
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(View::default().on_key(ctrl_c, 2), Action::Quit);
        // A plain `c` is no quit.
        assert_eq!(
            press(&mut View::default(), KeyCode::Char('c'), 2),
            Action::None
        );
    }

    #[test]
    fn esc_closes_help_before_quitting() {
        let mut v = View::default();
        assert_eq!(press(&mut v, KeyCode::Char('?'), 1), Action::Redraw);
        assert!(v.help);
        assert_eq!(press(&mut v, KeyCode::Esc, 1), Action::Redraw);
        assert!(!v.help);
        assert_eq!(press(&mut v, KeyCode::Esc, 1), Action::Quit);
    }

    #[test]
    fn sort_cycles() {
        let mut v = View::default();
        let mut seen = vec![v.sort];
        for _ in 0..3 {
            press(&mut v, KeyCode::Char('s'), 1);
            seen.push(v.sort);
        }
        assert_eq!(
            seen,
            [SortKey::Id, SortKey::Softirq, SortKey::Busy, SortKey::Id]
        );
    }

    #[test]
    fn freeze_toggles_with_f_and_space() {
        let mut v = View::default();
        press(&mut v, KeyCode::Char('f'), 1);
        assert!(v.frozen);
        press(&mut v, KeyCode::Char(' '), 1);
        assert!(!v.frozen);
    }

    #[test]
    fn nic_selection_wraps_and_numbers_pick() {
        let mut v = View::default();
        press(&mut v, KeyCode::Tab, 3);
        press(&mut v, KeyCode::Tab, 3);
        assert_eq!(v.nic, 2);
        press(&mut v, KeyCode::Tab, 3);
        assert_eq!(v.nic, 0);
        press(&mut v, KeyCode::BackTab, 3);
        assert_eq!(v.nic, 2);
        assert_eq!(press(&mut v, KeyCode::Char('1'), 3), Action::Redraw);
        assert_eq!(v.nic, 0);
        // A number past the last NIC does nothing.
        assert_eq!(press(&mut v, KeyCode::Char('4'), 3), Action::None);
        assert_eq!(v.nic, 0);
        // No NIC at all: tab does nothing and does not divide by zero.
        let mut empty = View::default();
        assert_eq!(press(&mut empty, KeyCode::Tab, 0), Action::None);
        assert_eq!(empty.nic, 0);
        // A stale index (the NIC list shrank) wraps from the last NIC.
        let mut stale = View {
            nic: 7,
            ..View::default()
        };
        press(&mut stale, KeyCode::Tab, 2);
        assert_eq!(stale.nic, 0);
    }

    #[test]
    fn key_release_is_ignored() {
        let mut v = View::default();
        let mut k = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        k.kind = KeyEventKind::Release;
        assert_eq!(v.on_key(k, 1), Action::None);
    }
}
