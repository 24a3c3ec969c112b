//! UTC dates for people and files: the one civil-date conversion that the
//! journal's timestamps and the bench/lab results' RFC 3339 times share.

use std::time::{SystemTime, UNIX_EPOCH};

/// Howard Hinnant's `civil_from_days` for days since 1970-01-01 (unsigned:
/// nothing nettune prints is earlier): `(year, month, day)`. No overflow
/// for any `u64` of days that seconds can give.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// `secs` since the epoch as `YYYY-MM-DD<sep>HH:MM:SSZ`.
fn format(secs: u64, sep: char) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}{sep}{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Seconds since the epoch as `2026-11-23 18:54:28Z` (the journal's and
/// `history`'s human form).
pub fn format_utc(secs: u64) -> String {
    format(secs, ' ')
}

/// `t` as RFC 3339 in UTC, to the second (`2026-11-23T21:40:00Z`); times
/// before 1970 print as the epoch.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format(secs, 'T')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00Z");
        // date -u -d @1795460068
        assert_eq!(format_utc(1_795_460_068), "2026-11-23 18:54:28Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00:00Z");
        assert_eq!(format_utc(4_107_542_399), "2100-02-28 23:59:59Z");
        // Any number formats without overflow.
        assert!(format_utc(u64::MAX).ends_with('Z'));
    }

    #[test]
    fn rfc3339() {
        let at = |s: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(s));
        // Expected values from `date -u -d ... +%s`.
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(1_795_470_000), "2026-11-23T21:40:00Z");
        assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00Z"
        );
    }
}
