//! The pre-authentication pool: connections that have not finished the
//! handshake, counted per source prefix, the oldest evicted to make room.

use super::*;

/// A connection that has not finished the handshake.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) id: u64,
    pub(super) prefix: IpAddr,
    pub(super) peer: SocketAddr,
    /// A handle on the connection, to close it when it is evicted.
    pub(super) conn: TcpStream,
    /// It has sent its preamble and (with a token) a valid proof: it is
    /// never evicted, only ended by its own handshake deadline.
    pub(super) protected: bool,
}

/// Connections that have not finished the handshake, oldest first.
#[derive(Debug, Default)]
pub(super) struct Preauth {
    pub(super) next_id: u64,
    pub(super) queue: std::collections::VecDeque<Pending>,
    pub(super) per_prefix: HashMap<IpAddr, u32>,
}

impl Preauth {
    /// Take the entry at `i` out of the pool.
    fn remove(&mut self, i: usize) -> Option<Pending> {
        let p = self.queue.remove(i)?;
        if let Some(n) = self.per_prefix.get_mut(&p.prefix) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_prefix.remove(&p.prefix);
            }
        }
        Some(p)
    }
}

/// The prefix a peer is counted under before authentication: its IPv4 /24
/// or IPv6 /64 (one host or one LAN usually holds a whole one).
pub fn preauth_prefix(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            let [a, b, c, _] = a.octets();
            IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, 0))
        }
        IpAddr::V6(a) => {
            let [a, b, c, d, ..] = a.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0))
        }
    }
}

/// A prefix for messages: `192.0.2.0/24`, `2001:db8::/64`.
fn prefix_text(p: IpAddr) -> String {
    match p {
        IpAddr::V4(_) => format!("{p}/24"),
        IpAddr::V6(_) => format!("{p}/64"),
    }
}

/// Why the pre-authentication pool has no place for a connection.
#[derive(Debug, Error)]
pub(super) enum Busy {
    /// The connection could not be duplicated to be closed later.
    #[error("server error (cannot track the connection: {0})")]
    Handle(std::io::Error),
    /// A thread panicked holding the pool's lock.
    #[error("server error (lock poisoned)")]
    Poisoned,
    /// Every unfinished handshake of the prefix, or of the pool, has
    /// already proved itself: none is evicted, the new one is refused.
    #[error(
        "server busy: {0} connections are finishing their handshakes; try again in a few seconds"
    )]
    Protected(String),
}

/// A place in the pre-authentication pool, given back on drop (also when a
/// session thread panics); a no-op when it was evicted meanwhile.
#[derive(Debug)]
pub(super) struct PreauthSlot {
    sh: Arc<Shared>,
    id: u64,
}

impl PreauthSlot {
    /// Enter `peer`'s connection `s` into the pool. When its prefix has its
    /// share, that prefix's oldest connection is evicted; when the pool is
    /// full, the oldest of all is. Returns the evicted connections (to be
    /// closed outside the lock) with the reason.
    pub(super) fn take(
        sh: &Arc<Shared>,
        peer: SocketAddr,
        s: &TcpStream,
    ) -> Result<(PreauthSlot, Vec<(Pending, String)>), Busy> {
        let l = &sh.cfg.limits;
        let conn = s.try_clone().map_err(Busy::Handle)?;
        let prefix = preauth_prefix(peer.ip());
        let Ok(mut p) = sh.preauth.lock() else {
            return Err(Busy::Poisoned);
        };
        let per = l.max_unauthenticated_per_prefix.max(1);
        let max = usize::try_from(l.max_unauthenticated.max(1)).unwrap_or(usize::MAX);
        // Victims are chosen first (only connections that have not proved
        // themselves), then removed: a refusal evicts nobody.
        let mut victims: Vec<(u64, String)> = Vec::new();
        if p.per_prefix.get(&prefix).copied().unwrap_or(0) >= per {
            let Some(e) = p.queue.iter().find(|e| e.prefix == prefix && !e.protected) else {
                return Err(Busy::Protected(prefix_text(prefix)));
            };
            let why = format!(
                "{} had {per} unfinished handshakes, the per-prefix limit",
                prefix_text(prefix)
            );
            victims.push((e.id, why));
        }
        let left = p.queue.len().saturating_sub(victims.len());
        if left >= max {
            let taken: Vec<u64> = victims.iter().map(|v| v.0).collect();
            let extra = left.saturating_sub(max).saturating_add(1);
            let more: Vec<u64> = p
                .queue
                .iter()
                .filter(|e| !e.protected && !taken.contains(&e.id))
                .take(extra)
                .map(|e| e.id)
                .collect();
            if more.len() < extra {
                return Err(Busy::Protected(format!("all {max}")));
            }
            for id in more {
                victims.push((
                    id,
                    format!("the server had {max} unfinished handshakes, its limit"),
                ));
            }
        }
        let mut evicted = Vec::new();
        for (id, why) in victims {
            if let Some(e) = p
                .queue
                .iter()
                .position(|e| e.id == id)
                .and_then(|i| p.remove(i))
            {
                evicted.push((e, why));
            }
        }
        let id = p.next_id;
        p.next_id = p.next_id.wrapping_add(1);
        p.queue.push_back(Pending {
            id,
            prefix,
            peer,
            conn,
            protected: false,
        });
        let n = p.per_prefix.entry(prefix).or_insert(0);
        *n = n.saturating_add(1);
        Ok((PreauthSlot { sh: sh.clone(), id }, evicted))
    }
}

impl PreauthSlot {
    /// The connection has sent its preamble and, when `proved`, a valid
    /// token proof: from now on it is never evicted to make room. Without
    /// a proof (a server without a token, where anyone can send a
    /// preamble) at most half the pool and half a prefix's share are kept
    /// so, and the rest stays evictable: the newest connection still gets
    /// in.
    pub(super) fn protect(&self, proved: bool) {
        let l = &self.sh.cfg.limits;
        let Ok(mut p) = self.sh.preauth.lock() else {
            return;
        };
        let Some(prefix) = p.queue.iter().find(|e| e.id == self.id).map(|e| e.prefix) else {
            return;
        };
        if !proved {
            let pool = usize::try_from(l.max_unauthenticated / 2).unwrap_or(usize::MAX);
            let share = usize::try_from((l.max_unauthenticated_per_prefix / 2).max(1))
                .unwrap_or(usize::MAX);
            let kept = p.queue.iter().filter(|e| e.protected).count();
            let kept_here = p
                .queue
                .iter()
                .filter(|e| e.protected && e.prefix == prefix)
                .count();
            if kept >= pool || kept_here >= share {
                return;
            }
        }
        if let Some(e) = p.queue.iter_mut().find(|e| e.id == self.id) {
            e.protected = true;
        }
    }
}

impl Drop for PreauthSlot {
    fn drop(&mut self) {
        if let Ok(mut p) = self.sh.preauth.lock() {
            if let Some(i) = p.queue.iter().position(|e| e.id == self.id) {
                p.remove(i);
            }
        }
    }
}
