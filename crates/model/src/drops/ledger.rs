//! Whether one CPU's records kept up with its count: while a perf event
//! samples every drop (period 1), each hit its count adds should come with
//! a record in its ring. The kernel can count a hit and write no sample
//! (seen on 6.18.44: drops freed in a softirq that interrupted one CPU's
//! idle task, counted by the event on that CPU, with no record and no
//! `PERF_RECORD_LOST`), and then the rows by reason would claim to be
//! exact while missing those drops.
//!
//! The watcher reads the count before it drains the ring, so at each drain
//! the records read cover every hit counted, except a record still being
//! written at that instant (read on a second drain a moment later) and
//! records of hits after the count was read (which make the shortfall
//! look smaller, never larger). What stays owed after the second drain is
//! unrecorded; the ledger keeps its largest value, so a drop is said once
//! and a later surplus of records does not take it back.

/// One CPU's count and records over the windows in which it sampled every
/// drop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordLedger {
    counted: u64,
    recorded: u64,
    unrecorded: u64,
}

impl RecordLedger {
    /// A drain window: `hits` counted (the count read before the ring was
    /// drained) and `records` read from the ring. `every`: the event's
    /// period was 1 for the whole window; other windows are not entered
    /// (one record per N hits says nothing of a missing one).
    pub fn window(&mut self, hits: u64, records: u64, every: bool) {
        if every {
            self.counted = self.counted.saturating_add(hits);
            self.recorded = self.recorded.saturating_add(records);
        }
    }

    /// Records read on a second drain of a window whose records were owed.
    pub fn late(&mut self, records: u64) {
        self.recorded = self.recorded.saturating_add(records);
    }

    /// Whether more hits are counted than recorded than were said so far:
    /// worth draining once more before [`RecordLedger::close`].
    pub fn owes(&self) -> bool {
        self.counted.saturating_sub(self.recorded) > self.unrecorded
    }

    /// End the drain: what is still owed is unrecorded (the largest owed so
    /// far). Returns the unrecorded drops so far.
    pub fn close(&mut self) -> u64 {
        self.unrecorded = self
            .unrecorded
            .max(self.counted.saturating_sub(self.recorded));
        self.unrecorded
    }

    /// Drops counted and never recorded so far.
    pub fn unrecorded(&self) -> u64 {
        self.unrecorded
    }
}

#[cfg(test)]
mod tests {
    use super::RecordLedger;

    #[test]
    fn hits_without_records_at_period_one_are_unrecorded() {
        let mut l = RecordLedger::default();
        l.window(2, 0, true);
        assert!(l.owes());
        assert_eq!(l.close(), 2);
        // said once: quiet windows after it do not add to it or take it back
        l.window(0, 0, true);
        assert!(!l.owes());
        assert_eq!(l.close(), 2);
    }

    #[test]
    fn a_record_read_on_the_second_drain_is_not_unrecorded() {
        let mut l = RecordLedger::default();
        l.window(3, 2, true);
        assert!(l.owes());
        l.late(1);
        assert!(!l.owes());
        assert_eq!(l.close(), 0);
    }

    #[test]
    fn records_of_hits_after_the_count_do_not_take_back_what_was_said() {
        let mut l = RecordLedger::default();
        l.window(5, 3, true);
        assert_eq!(l.close(), 2);
        // the next drain reads 4 records for 1 hit counted before it: three
        // belong to hits after its count, the two unrecorded stay said
        l.window(1, 4, true);
        assert_eq!(l.close(), 2);
        l.window(0, 0, true);
        assert_eq!(l.close(), 2);
        // and a new shortfall beyond them is said on top
        l.window(10, 4, true);
        assert_eq!(l.close(), 5);
    }

    #[test]
    fn windows_sampled_one_in_n_are_not_entered() {
        let mut l = RecordLedger::default();
        l.window(1000, 10, false);
        assert!(!l.owes());
        assert_eq!(l.close(), 0);
        assert_eq!(l.unrecorded(), 0);
    }
}
