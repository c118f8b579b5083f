//! Which connections of the direct socket are served: the slots shared fairly between uids.
//!
//! A bound per uid alone still lets a few uids take every slot (4 uids x 4 connections fill
//! 16). So when the slots are full, a connection of a uid that holds fewer than the uid
//! holding the most (by two or more, so that two uids never take a slot from each other in
//! turn) takes the slot of that uid's connection that has been idle longest, and a
//! connection of root takes one whenever root holds none: the administrator can always look.
//! A connection that may not take a slot waits (accepted, not yet served), and a freed slot
//! goes to the waiting connection of the uid that holds fewest, the oldest first. This is
//! pure bookkeeping: the accept loop owns the sockets and closes what this says.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

/// A connection, numbered by the accept loop.
pub type ConnId = u64;

/// What becomes of a connection that arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Served now.
    Admit,
    /// Served now, in the slot of this connection, which is to be closed.
    AdmitEvicting(ConnId),
    /// Not served yet: it waits for a slot ([`Admission::admissible`]).
    Wait,
    /// Its uid holds its bound already (served and waiting): it is to be closed.
    Refuse,
}

#[derive(Debug, Clone)]
struct Served {
    uid: u32,
    /// Answering a call: not idle, so not evicted.
    busy: bool,
    /// The last call answered, or the admission.
    last_active: Instant,
}

/// The slots of the direct socket and the connections waiting for one.
#[derive(Debug)]
pub struct Admission {
    slots: usize,
    per_uid: usize,
    served: HashMap<ConnId, Served>,
    waiting: VecDeque<(ConnId, u32)>,
}

impl Admission {
    /// `slots` connections served at once, at most `per_uid` of one uid served or waiting.
    pub fn new(slots: usize, per_uid: usize) -> Self {
        Admission {
            slots,
            per_uid,
            served: HashMap::new(),
            waiting: VecDeque::new(),
        }
    }

    /// Connections served and waiting: the accept loop stops accepting at a bound of these,
    /// so that further clients wait in the listen backlog, not in the daemon.
    pub fn held(&self) -> usize {
        self.served.len() + self.waiting.len()
    }

    fn served_of(&self, uid: u32) -> usize {
        self.served.values().filter(|s| s.uid == uid).count()
    }

    /// Decides on connection `id` of `uid`, arriving at `now`.
    pub fn arrive(&mut self, id: ConnId, uid: u32, now: Instant) -> Arrival {
        let waiting_of = self.waiting.iter().filter(|(_, u)| *u == uid).count();
        let mine = self.served_of(uid);
        if mine + waiting_of >= self.per_uid {
            return Arrival::Refuse;
        }
        let admit = |s: &mut Self| {
            s.served.insert(
                id,
                Served {
                    uid,
                    busy: false,
                    last_active: now,
                },
            );
        };
        if self.served.len() < self.slots {
            admit(self);
            return Arrival::Admit;
        }
        match self.victim_for(uid, mine) {
            Some(victim) => {
                self.served.remove(&victim);
                admit(self);
                Arrival::AdmitEvicting(victim)
            }
            None => {
                self.waiting.push_back((id, uid));
                Arrival::Wait
            }
        }
    }

    /// The connection whose slot a newcomer of `uid` (holding `mine`) takes, if any: the
    /// longest idle of the uids holding the most, when they hold at least two more than it,
    /// or, for root holding none, at least one.
    fn victim_for(&self, uid: u32, mine: usize) -> Option<ConnId> {
        let mut counts: HashMap<u32, usize> = HashMap::new();
        for s in self.served.values() {
            *counts.entry(s.uid).or_default() += 1;
        }
        let most = counts.values().copied().max()?;
        let fair = mine + 1 < most || (uid == 0 && mine == 0);
        if !fair {
            return None;
        }
        self.served
            .iter()
            .filter(|(_, s)| s.uid != uid && !s.busy && counts.get(&s.uid) == Some(&most))
            .min_by_key(|(id, s)| (s.last_active, **id))
            .map(|(id, _)| *id)
    }

    /// Connection `id` is answering a call: it is not idle until [`Admission::finished`].
    pub fn started(&mut self, id: ConnId) {
        if let Some(s) = self.served.get_mut(&id) {
            s.busy = true;
        }
    }

    /// Connection `id` has answered its call; `worked` is when, for a call that is the work
    /// a connection is kept for (a GetManagedObjects, not a Ping), which makes it the most
    /// recently active.
    pub fn finished(&mut self, id: ConnId, worked: Option<Instant>) {
        if let Some(s) = self.served.get_mut(&id) {
            s.busy = false;
            if let Some(at) = worked {
                s.last_active = at;
            }
        }
    }

    /// Connection `id` ended (served or waiting); nothing when it is already gone.
    pub fn left(&mut self, id: ConnId) {
        self.served.remove(&id);
        self.waiting.retain(|(w, _)| *w != id);
    }

    /// The waiting connections that now have a slot, served from now on: while a slot is
    /// free, the one of the uid holding fewest, the oldest among equals.
    pub fn admissible(&mut self, now: Instant) -> Vec<ConnId> {
        let mut out = Vec::new();
        while self.served.len() < self.slots {
            let Some(pos) =
                (0..self.waiting.len()).min_by_key(|&i| (self.served_of(self.waiting[i].1), i))
            else {
                break;
            };
            let Some((id, uid)) = self.waiting.remove(pos) else {
                break;
            };
            self.served.insert(
                id,
                Served {
                    uid,
                    busy: false,
                    last_active: now,
                },
            );
            out.push(id);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn fill(a: &mut Admission, uids: &[u32], per: usize, t0: Instant) -> ConnId {
        let mut id = 0;
        for (k, uid) in uids.iter().enumerate() {
            for j in 0..per {
                id += 1;
                let at = t0 + Duration::from_millis((k * per + j) as u64);
                assert_eq!(a.arrive(id, *uid, at), Arrival::Admit);
            }
        }
        id
    }

    #[test]
    fn four_uids_cannot_keep_a_fifth_out() {
        let t0 = Instant::now();
        let mut a = Admission::new(16, 4);
        let last = fill(&mut a, &[1001, 1002, 1003, 1004], 4, t0);
        // The uids' oldest idle connection is uid 1001's first.
        let now = t0 + Duration::from_secs(1);
        assert_eq!(a.arrive(last + 1, 1005, now), Arrival::AdmitEvicting(1));
        // The next newcomer takes from another uid that holds 4, not from 1001 (now 3).
        assert_eq!(a.arrive(last + 2, 1006, now), Arrival::AdmitEvicting(5));
        assert_eq!(a.held(), 16);
    }

    #[test]
    fn a_busy_connection_is_not_evicted_and_the_longest_idle_is() {
        let t0 = Instant::now();
        let mut a = Admission::new(4, 4);
        fill(&mut a, &[1001], 4, t0);
        a.started(1);
        a.started(2);
        a.finished(2, Some(t0 + Duration::from_secs(5)));
        a.started(4);
        a.finished(4, None);
        // 1 is answering a call; 3 has been idle longest now (2 answered a GetManagedObjects
        // at +5 s; 4 only a Ping, which does not count).
        assert_eq!(
            a.arrive(10, 1002, t0 + Duration::from_secs(6)),
            Arrival::AdmitEvicting(3)
        );
        assert_eq!(
            a.arrive(11, 1003, t0 + Duration::from_secs(6)),
            Arrival::AdmitEvicting(4)
        );
    }

    #[test]
    fn uids_holding_about_as_many_do_not_take_slots_from_each_other() {
        let t0 = Instant::now();
        let mut a = Admission::new(4, 4);
        fill(&mut a, &[1001, 1002], 2, t0);
        // 1003 holds none, the most is 2: 0 + 1 < 2, so it takes one.
        assert_eq!(a.arrive(10, 1003, t0), Arrival::AdmitEvicting(1));
        // Now 1, 2, 1: the next uid takes the oldest of 1002, which holds the most.
        assert_eq!(a.arrive(11, 1004, t0), Arrival::AdmitEvicting(3));
        // 1 each: nobody takes from anybody; they wait.
        assert_eq!(a.arrive(12, 1005, t0), Arrival::Wait);
        assert_eq!(a.arrive(13, 1001, t0), Arrival::Wait);
    }

    #[test]
    fn root_always_gets_one() {
        let t0 = Instant::now();
        let mut a = Admission::new(4, 4);
        fill(&mut a, &[1001, 1002, 1003, 1004], 1, t0);
        assert_eq!(a.arrive(10, 1005, t0), Arrival::Wait);
        assert_eq!(a.arrive(11, 0, t0), Arrival::AdmitEvicting(1));
        // Its second waits like anyone's.
        assert_eq!(a.arrive(12, 0, t0), Arrival::Wait);
    }

    #[test]
    fn a_uid_is_bounded_served_and_waiting_together() {
        let t0 = Instant::now();
        let mut a = Admission::new(2, 3);
        fill(&mut a, &[1001], 2, t0);
        assert_eq!(a.arrive(3, 1001, t0), Arrival::Wait);
        assert_eq!(a.arrive(4, 1001, t0), Arrival::Refuse);
        a.left(3);
        assert_eq!(a.arrive(5, 1001, t0), Arrival::Wait);
    }

    #[test]
    fn a_freed_slot_goes_to_the_uid_holding_fewest() {
        let t0 = Instant::now();
        let mut a = Admission::new(2, 4);
        fill(&mut a, &[1001], 1, t0);
        assert_eq!(a.arrive(2, 1002, t0), Arrival::Admit);
        // Full, one each: both wait, 1001's first.
        assert_eq!(a.arrive(3, 1001, t0), Arrival::Wait);
        assert_eq!(a.arrive(4, 1003, t0), Arrival::Wait);
        a.left(2);
        // 1003 holds none, 1001 holds one: 1003's goes first although it came later.
        assert_eq!(a.admissible(t0), vec![4]);
        a.left(1);
        assert_eq!(a.admissible(t0), vec![3]);
        assert!(a.admissible(t0).is_empty());
    }
}
