//! Read `/proc/net/sockstat` (socket counts: TIME_WAIT, orphans, TCP memory)
//! through a [`Root`]. Under `ip netns exec` it is the namespace's file.

use crate::error::HostError;
use crate::root::Root;
use model::parse::sockstat::{parse_sockstat, Sockstat};

/// Path of the file.
pub const SOCKSTAT: &str = "/proc/net/sockstat";

/// Read and parse `/proc/net/sockstat`; `Ok(None)` when the root lacks it
/// (an older capture), an error naming the file when it does not parse.
pub fn read_sockstat(root: &Root) -> Result<Option<Sockstat>, HostError> {
    let mut buf = String::new();
    if !root.read_into(SOCKSTAT, &mut buf)? {
        return Ok(None);
    }
    parse_sockstat(&buf)
        .map(Some)
        .map_err(|source| HostError::Parse {
            path: SOCKSTAT.into(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_corrupt_and_present() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        assert_eq!(read_sockstat(&root).unwrap(), None);
        std::fs::create_dir_all(t.path().join("proc/net")).unwrap();
        std::fs::write(t.path().join("proc/net/sockstat"), "TCP: tw x\n").unwrap();
        let e = read_sockstat(&root).unwrap_err();
        assert!(e.to_string().contains(SOCKSTAT), "{e}");
        std::fs::write(
            t.path().join("proc/net/sockstat"),
            "TCP: inuse 3 orphan 0 tw 27000 alloc 5 mem 2\n",
        )
        .unwrap();
        let s = read_sockstat(&root).unwrap().unwrap();
        assert_eq!(s.tcp_tw(), Some(27000));
    }

    #[test]
    fn live_has_tcp() {
        let s = read_sockstat(&Root::live()).unwrap().unwrap();
        assert!(s.tcp_tw().is_some());
    }
}
