//! Pure tuning decisions: profiles turn a `HostSnapshot` into a `Plan`.
