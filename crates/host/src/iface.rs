//! Interface names: the one check every path that names an interface in a
//! file path or an `ethtool` argument goes through (apply's targets, the
//! ethtool backends, captures).

use crate::error::HostError;

/// An interface name as the kernel accepts it (`dev_valid_name`): 1 to 15
/// bytes, not `.` or `..`, no `/`, `:`, whitespace or control bytes; and not
/// starting with `-` (it is an `ethtool` argument on a live host).
pub fn check_iface(name: &str) -> Result<(), HostError> {
    const RULE: &str =
        "1 to 15 bytes, not . or .., no / : whitespace or control bytes, not starting with -";
    let ok = !name.is_empty()
        && name.len() <= 15
        && name != "."
        && name != ".."
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c != '/' && c != ':' && !c.is_whitespace() && !c.is_control());
    if ok {
        Ok(())
    } else {
        Err(HostError::BadName {
            what: "interface",
            name: name.chars().take(80).collect(),
            rule: RULE,
        })
    }
}
