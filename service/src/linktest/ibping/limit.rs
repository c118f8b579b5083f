//! How often the responder answers: at most [`PER_PEER`] replies a second to one source LID,
//! [`TOTAL`] in all, in a table of [`PEERS`] peers that never grows (the least recently
//! seen peer gives its place to a new one). A peer that floods gets its share and no more;
//! ibping's own pace (one a second, or flood mode's one at a time) stays well inside it.

use std::time::Instant;

/// Replies a second to one peer, and to all.
pub const PER_PEER: u32 = 200;
pub const TOTAL: u32 = 2000;
/// Peers the table holds.
pub const PEERS: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    lid: u16,
    tokens: f64,
    last: Instant,
}

/// Token buckets by source LID, and one for everyone.
#[derive(Debug)]
pub struct ReplyLimit {
    peers: Vec<Bucket>,
    all: Bucket,
}

impl ReplyLimit {
    pub fn new(now: Instant) -> ReplyLimit {
        ReplyLimit {
            peers: Vec::with_capacity(PEERS),
            all: Bucket {
                lid: 0,
                tokens: f64::from(TOTAL),
                last: now,
            },
        }
    }

    /// Whether a reply to `lid` may go now; takes its token when it may.
    pub fn allow(&mut self, lid: u16, now: Instant) -> bool {
        refill(&mut self.all, f64::from(TOTAL), now);
        let i = match self.peers.iter().position(|b| b.lid == lid) {
            Some(i) => i,
            None => {
                let fresh = Bucket {
                    lid,
                    tokens: f64::from(PER_PEER),
                    last: now,
                };
                if self.peers.len() < PEERS {
                    self.peers.push(fresh);
                    self.peers.len() - 1
                } else {
                    let oldest = self
                        .peers
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, b)| b.last)
                        .map_or(0, |(i, _)| i);
                    self.peers[oldest] = fresh;
                    oldest
                }
            }
        };
        let peer = &mut self.peers[i];
        refill(peer, f64::from(PER_PEER), now);
        if peer.tokens < 1.0 || self.all.tokens < 1.0 {
            return false;
        }
        peer.tokens -= 1.0;
        self.all.tokens -= 1.0;
        true
    }
}

fn refill(b: &mut Bucket, rate: f64, now: Instant) {
    let secs = now.saturating_duration_since(b.last).as_secs_f64();
    b.tokens = (b.tokens + secs * rate).min(rate);
    b.last = now;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_flooding_peer_gets_its_share_and_others_theirs() {
        let t0 = Instant::now();
        let mut l = ReplyLimit::new(t0);
        let granted = (0..1000).filter(|_| l.allow(7, t0)).count();
        assert_eq!(granted, PER_PEER as usize);
        // Another peer is not held back by the first.
        assert!(l.allow(8, t0));
        // A second later the first has its share again.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(
            (0..1000).filter(|_| l.allow(7, t1)).count(),
            PER_PEER as usize
        );
    }

    #[test]
    fn many_peers_share_the_total_and_the_table_stays_bounded() {
        let t0 = Instant::now();
        let mut l = ReplyLimit::new(t0);
        let mut granted = 0;
        for lid in 1..=5000u16 {
            if l.allow(lid, t0) {
                granted += 1;
            }
        }
        assert_eq!(granted, TOTAL as usize);
        assert_eq!(l.peers.len(), PEERS);
    }
}
