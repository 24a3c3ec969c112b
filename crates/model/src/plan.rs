//! Tuning plans: ordered changes to kernel knobs (filled by the tuner work).
