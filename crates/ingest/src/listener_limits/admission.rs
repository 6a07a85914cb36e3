//! The two caps of a listener: connections in total, and connections per address that
//! have not published yet. One table behind one short lock; a [`Slot`] is one
//! admitted connection and gives its place back when dropped.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Refusal;

/// The unit one per-address cap applies to: an IPv4 address, or an IPv6 /64 (what one
/// subscriber is usually given, so a host cannot dodge the cap by walking its prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressKey(IpAddr);

impl AddressKey {
    /// The key of a peer address (an IPv4-mapped IPv6 address is its IPv4 address).
    pub fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                AddressKey(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            v4 => AddressKey(v4),
        }
    }
}

/// A listener's caps and what it holds now.
#[derive(Debug)]
pub struct Admission {
    max_total: usize,
    max_pending_per_address: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    /// Connections not yet publishing, per address; an address with none has no entry,
    /// so the table never holds more than `max_total` entries.
    pending: HashMap<AddressKey, usize>,
}

/// One admitted connection. Dropping it frees its place in the total and, while it
/// has not published, in its address's count.
#[derive(Debug)]
pub struct Slot {
    admission: Arc<Admission>,
    /// `Some` while the connection counts against its address's pending cap.
    pending: Option<AddressKey>,
}

impl Admission {
    /// Caps of `max_total` connections and `max_pending_per_address` not-yet-publishing
    /// connections per address (each at least 1).
    pub fn new(max_total: usize, max_pending_per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            max_total: max_total.max(1),
            max_pending_per_address: max_pending_per_address.max(1),
            open: Mutex::new(Open::default()),
        })
    }

    /// Admits a connection from `peer`, or says which cap refuses it (the address's
    /// cap first: it names the client at fault).
    ///
    /// # Errors
    /// [`Refusal::AddressFull`] or [`Refusal::ListenerFull`].
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Slot, Refusal> {
        let key = AddressKey::of(peer);
        let mut open = self.lock();
        if open.pending.get(&key).copied().unwrap_or(0) >= self.max_pending_per_address {
            return Err(Refusal::AddressFull);
        }
        if open.total >= self.max_total {
            return Err(Refusal::ListenerFull);
        }
        open.total += 1;
        *open.pending.entry(key).or_insert(0) += 1;
        Ok(Slot {
            admission: Arc::clone(self),
            pending: Some(key),
        })
    }

    /// Connections held now.
    pub fn open(&self) -> usize {
        self.lock().total
    }

    /// Connections from `peer`'s address that have not published.
    pub fn pending(&self, peer: IpAddr) -> usize {
        self.lock()
            .pending
            .get(&AddressKey::of(peer))
            .copied()
            .unwrap_or(0)
    }

    fn lock(&self) -> MutexGuard<'_, Open> {
        // Nothing panics while the lock is held (counting only), so it is never poisoned;
        // if it were, the counts are still consistent.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn release_pending(open: &mut Open, key: AddressKey) {
        if let Some(count) = open.pending.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                open.pending.remove(&key);
            }
        }
    }
}

impl Slot {
    /// The connection's publish was accepted: it no longer counts against its
    /// address's pending cap (it still counts in the total).
    pub fn published(&mut self) {
        if let Some(key) = self.pending.take() {
            Admission::release_pending(&mut self.admission.lock(), key);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.admission.lock();
        open.total -= 1;
        if let Some(key) = self.pending.take() {
            Admission::release_pending(&mut open, key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use proptest::prelude::*;

    use super::*;

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    #[test]
    fn an_address_is_refused_past_its_pending_cap_and_others_are_not() {
        let admission = Admission::new(10, 2);
        let held: Vec<Slot> = (0..2)
            .map(|_| admission.admit(v4(2)).expect("under the cap"))
            .collect();
        assert_eq!(admission.admit(v4(2)).unwrap_err(), Refusal::AddressFull);
        let _other = admission.admit(v4(7)).expect("another address");
        assert_eq!(admission.open(), 3);
        drop(held);
        assert_eq!(admission.pending(v4(2)), 0);
        assert!(admission.admit(v4(2)).is_ok(), "places come back on drop");
    }

    #[test]
    fn a_published_connection_leaves_its_address_count_but_not_the_total() {
        let admission = Admission::new(3, 1);
        let mut first = admission.admit(v4(2)).expect("first");
        assert_eq!(admission.admit(v4(2)).unwrap_err(), Refusal::AddressFull);
        first.published();
        first.published();
        assert_eq!(admission.pending(v4(2)), 0);
        let _second = admission
            .admit(v4(2))
            .expect("the address may start another");
        let _third = admission.admit(v4(3)).expect("third in all");
        assert_eq!(admission.admit(v4(4)).unwrap_err(), Refusal::ListenerFull);
        drop(first);
        assert_eq!(admission.open(), 2);
        assert!(admission.admit(v4(4)).is_ok());
    }

    #[derive(Debug, Clone)]
    enum Step {
        Admit(u8),
        Publish(usize),
        Drop(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (2u8..6).prop_map(Step::Admit),
            any::<usize>().prop_map(Step::Publish),
            any::<usize>().prop_map(Step::Drop),
        ]
    }

    proptest! {
        /// Whatever the order of admissions, publishes and drops, the caps hold, a
        /// refusal happens only at a cap, and every place comes back.
        #[test]
        fn the_caps_hold_and_every_place_comes_back(
            steps in proptest::collection::vec(step(), 0..200),
        ) {
            let (total, per_address) = (6, 2);
            let admission = Admission::new(total, per_address);
            let mut held: Vec<(Slot, u8, bool)> = Vec::new();
            for s in steps {
                match s {
                    Step::Admit(n) => {
                        let pending = held.iter().filter(|(_, a, p)| *a == n && !*p).count();
                        match admission.admit(v4(n)) {
                            Ok(slot) => {
                                prop_assert!(pending < per_address && held.len() < total);
                                held.push((slot, n, false));
                            }
                            Err(Refusal::AddressFull) => prop_assert_eq!(pending, per_address),
                            Err(Refusal::ListenerFull) => prop_assert_eq!(held.len(), total),
                        }
                    }
                    Step::Publish(i) if !held.is_empty() => {
                        let i = i % held.len();
                        held[i].0.published();
                        held[i].2 = true;
                    }
                    Step::Drop(i) if !held.is_empty() => {
                        held.swap_remove(i % held.len());
                    }
                    _ => {}
                }
                prop_assert_eq!(admission.open(), held.len());
                for n in 2u8..6 {
                    let pending = held.iter().filter(|(_, a, p)| *a == n && !*p).count();
                    prop_assert_eq!(admission.pending(v4(n)), pending);
                }
            }
            held.clear();
            prop_assert_eq!(admission.open(), 0);
            prop_assert!(admission.lock().pending.is_empty());
        }
    }

    #[test]
    fn ipv6_is_capped_by_its_64_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().expect("ip");
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().expect("ip");
        let c: IpAddr = "2001:db8:1:3::1".parse().expect("ip");
        assert_eq!(AddressKey::of(a), AddressKey::of(b));
        assert_ne!(AddressKey::of(a), AddressKey::of(c));
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().expect("ip");
        assert_eq!(AddressKey::of(mapped), AddressKey::of(v4(2)));

        let admission = Admission::new(10, 1);
        let _held = admission.admit(a).expect("first of the /64");
        assert_eq!(admission.admit(b).unwrap_err(), Refusal::AddressFull);
        assert!(admission.admit(c).is_ok());
    }
}
