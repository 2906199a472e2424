//! [`Table`]: the keyed limiter's store when it has a bound on keys, a fixed array of slots
//! sized from `max_keys`, each a tag word (the key's fingerprint and the slot's state) beside
//! the family's cell, inline ([the guide](crate::guide::keyed_table)). The array is
//! allocated in up to [`SEGMENTS`] segments, each when an insertion first needs a slot in it,
//! so a limiter bounded at a million keys that holds a thousand allocates a few segments.
//!
//! - A lookup pins itself ([`Grace`]), probes from the key's home group and uses the first
//!   slot whose tag is its fingerprint, live; it takes no lock and writes nothing shared but
//!   the cell's own CAS (its pin is a counter on a cache line of its thread's).
//! - An insertion claims the first free slot of the key's probe run by a CAS of its tag,
//!   under the lock of the key's home stripe, so that two threads inserting one key get one
//!   slot (different keys race for a free slot by the CAS alone).
//! - A sweep retires idle slots (a CAS of the tag), waits for a grace period, and frees those
//!   still retiring and still idle (another CAS). A reader that meets a retiring slot of its
//!   key takes it back (a CAS to live) before touching the cell, so a freed slot's cell was
//!   untouched since the sweep judged it idle, and no reader still holds it when a new key
//!   claims it.

use std::sync::OnceLock;

use crate::sync::{AdminLock, AtomicU64, Ordering, EAGER_SEGMENTS};

use super::grace::Grace;

/// Slots per group: a group is one 64-byte line for the 16-byte slots of the 8-byte cells.
const GROUP: usize = 4;

/// Groups a probe run spans at most (512 slots): a lookup of an absent key stops at the
/// first empty slot or after these; an insertion that finds no free slot in them is refused.
/// The table is sized so that the live slots fill at most 5/6 of it: filled to the bound
/// with random keys, tables of 1 M and 10 M keys found a free slot for every key with this
/// bound (with a quarter more slots than keys and 64 groups, about one key in a million was
/// refused; with 32 groups, one in twenty thousand).
const PROBE_GROUPS: usize = 128;

/// Segments the slots are allocated in, at most.
const SEGMENTS: usize = 256;

/// Stripes of insertion locks (each key's inserts lock the stripe of its home group).
const INSERT_STRIPES: usize = 64;

/// The largest `max_keys` a table is built for (2^27 keys, 120 slots per 100 keys): a larger
/// bound keeps the growing map, so that no bound a configuration names
/// allocates beyond what a machine holds.
pub(super) const MAX_TABLE_KEYS: usize = 1 << 27;

/// A slot's tag: `[fingerprint: 62 | state: 2]`, the fingerprint the top 62 bits of the key's
/// keyed hash. States: `0` empty (the whole tag 0: never used), `1` live, `2` retiring (a
/// sweep found it idle and waits for a grace period to free it), `3` free (freed by a sweep;
/// the tag is then `FREE` whatever the fingerprint was).
mod tag {
    /// Never used: a lookup stops here.
    pub(super) const EMPTY: u64 = 0;
    /// Freed by a sweep: an insertion may claim it, a lookup goes past it.
    pub(super) const FREE: u64 = 3;
    const LIVE: u64 = 1;
    const RETIRING: u64 = 2;
    const STATE: u64 = 0b11;

    /// The live tag of the key hashed to `hash`.
    #[inline]
    pub(super) fn live(hash: u64) -> u64 {
        (hash & !STATE) | LIVE
    }

    /// `tag` (live) as retiring.
    #[inline]
    pub(super) fn retiring(tag: u64) -> u64 {
        (tag & !STATE) | RETIRING
    }

    #[inline]
    pub(super) fn is_live(tag: u64) -> bool {
        tag & STATE == LIVE
    }

    #[inline]
    pub(super) fn is_retiring(tag: u64) -> bool {
        tag & STATE == RETIRING
    }

    #[inline]
    pub(super) fn is_free(tag: u64) -> bool {
        tag == EMPTY || tag == FREE
    }
}

/// The hash a table uses for a key's: `hash` through a bijection that spreads its low bits
/// into its high ones (an xorshift, then a multiplication by an odd constant), so that a
/// hasher that leaves the high bits alike (an identity hash of small integers) still spreads
/// homes over the table; a bijection, so two keys share a fingerprint only if their hashes
/// are equal in the bits the fingerprint keeps after it.
#[inline]
fn spread(hash: u64) -> u64 {
    (hash ^ (hash >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A segment: its groups, allocated on first use.
type Segment<C> = OnceLock<Box<[Group<C>]>>;

/// One key's place: its tag and its cell.
struct Slot<C> {
    tag: AtomicU64,
    cell: C,
}

/// [`GROUP`] slots on one cache line (or, for larger cells, starting on one).
#[repr(align(64))]
struct Group<C> {
    slots: [Slot<C>; GROUP],
}

/// Why an insertion found no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    /// The caller's reservation refused the key (the bound on keys is reached).
    Refused,
    /// The reservation was made, but no slot of the key's probe run is free: the caller
    /// gives the reservation back.
    NoSlot,
}

/// The fixed array of slots (see the module docs).
pub(super) struct Table<C> {
    /// The groups, `segment_groups` (a power of two) to a segment but the last; a segment
    /// not allocated yet is all empty slots.
    segments: Box<[Segment<C>]>,
    /// log2 of the groups a segment holds.
    segment_shift: u32,
    /// Groups in the table.
    groups: usize,
    grace: Grace,
    inserts: Box<[AdminLock]>,
    /// One sweep at a time (its grace period flips the epoch).
    sweep: AdminLock,
    /// Slots live or retiring.
    held: AtomicU64,
    /// The `max_keys` the table was sized for.
    #[cfg_attr(not(feature = "rules"), allow(dead_code))]
    built_for: usize,
}

impl<C> Table<C> {
    /// A table for up to `max_keys` keys: at least [`GROUP`] slots, and a fifth more than
    /// `max_keys` (19.2 bytes a key for 16-byte slots at the bound), each cell `make()` once
    /// its segment is allocated.
    pub(super) fn new(max_keys: usize, make: impl Fn() -> C) -> Self {
        let slots = max_keys.saturating_add(max_keys.div_ceil(5)).max(GROUP);
        let groups = slots.div_ceil(GROUP);
        let segment_groups = groups.div_ceil(SEGMENTS).next_power_of_two();
        let table = Self {
            segments: (0..groups.div_ceil(segment_groups))
                .map(|_| OnceLock::new())
                .collect(),
            segment_shift: segment_groups.trailing_zeros(),
            groups,
            grace: Grace::new(),
            inserts: (0..INSERT_STRIPES.min(groups))
                .map(|_| AdminLock::new())
                .collect(),
            sweep: AdminLock::new(),
            held: AtomicU64::new(0),
            built_for: max_keys,
        };
        if EAGER_SEGMENTS {
            for segment in 0..table.segments.len() {
                table.segment(segment, &make);
            }
        }
        table
    }

    /// The `max_keys` the table was sized for.
    #[cfg(feature = "rules")]
    pub(super) fn built_for(&self) -> usize {
        self.built_for
    }

    /// Slots in the table.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.groups * GROUP
    }

    /// Bytes the segments allocated so far hold.
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.segments
            .iter()
            .filter_map(OnceLock::get)
            .map(|groups| std::mem::size_of_val(&**groups))
            .sum()
    }

    /// Slots live or retiring.
    pub(super) fn len(&self) -> usize {
        // Relaxed: a count for display and heuristics; nothing is read after it.
        self.held.load(Ordering::Relaxed) as usize
    }

    /// The home group of `hash`: its fingerprint's bits (the low two cleared) scaled to the
    /// number of groups, so that keys sharing a fingerprint share a home, a probe run and an
    /// insertion stripe, and act as one key (never as two cells of one fingerprint).
    #[inline]
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash & !0b11) * self.groups as u128) >> 64) as usize
    }

    /// The group indices of `hash`'s probe run, in order.
    #[inline]
    fn run(&self, hash: u64) -> impl Iterator<Item = usize> + use<C> {
        let home = self.home(hash);
        let groups = self.groups;
        (0..groups.min(PROBE_GROUPS)).map(move |step| {
            let index = home + step;
            if index >= groups {
                index - groups
            } else {
                index
            }
        })
    }

    /// Group `index`, if its segment is allocated.
    #[inline]
    fn group(&self, index: usize) -> Option<&Group<C>> {
        let segment = self.segments[index >> self.segment_shift].get()?;
        Some(&segment[index & ((1 << self.segment_shift) - 1)])
    }

    /// Segment `segment`, allocating it with fresh cells if it is not yet.
    fn segment(&self, segment: usize, make: &impl Fn() -> C) -> &[Group<C>] {
        self.segments[segment].get_or_init(|| {
            let first = segment << self.segment_shift;
            let len = (1 << self.segment_shift).min(self.groups - first);
            (0..len)
                .map(|_| Group {
                    slots: std::array::from_fn(|_| Slot {
                        tag: AtomicU64::new(tag::EMPTY),
                        cell: make(),
                    }),
                })
                .collect()
        })
    }

    /// `f` of the cell of the key hashed to `hash`; `None` if absent.
    #[inline]
    pub(super) fn read<R>(&self, hash: u64, f: impl FnOnce(&C) -> R) -> Option<R> {
        let hash = spread(hash);
        let _pin = self.grace.pin();
        self.find(hash).map(|slot| f(&slot.cell))
    }

    /// The live slot of `hash`, taking it back from a sweep that retires it. The caller is
    /// pinned.
    #[inline]
    fn find(&self, hash: u64) -> Option<&Slot<C>> {
        let live = tag::live(hash);
        let mut index = self.home(hash);
        for _ in 0..self.groups.min(PROBE_GROUPS) {
            // A group not allocated yet is empty slots: the key is not held.
            let group = self.group(index)?;
            for slot in &group.slots {
                // SeqCst: loaded after the pin, in the total order with the sweep's marks
                // and its flip of the epoch (see `Grace::pin`); Acquire at least, so that a
                // slot claimed for this key is seen with its cell.
                let seen = slot.tag.load(Ordering::SeqCst);
                if seen == live {
                    return Some(slot);
                }
                if seen == tag::EMPTY {
                    return None;
                }
                if seen == tag::retiring(live) && Self::take_back(slot, live) {
                    return Some(slot);
                }
            }
            index += 1;
            if index == self.groups {
                index = 0;
            }
        }
        None
    }

    /// Takes `slot`, retiring, back to `live` before its cell is touched, so that the
    /// sweep's free (a CAS from retiring) fails; `false` if the sweep freed it first (the
    /// key was idle, so a fresh slot is as good: it may be inserted again).
    #[cold]
    fn take_back(slot: &Slot<C>, live: u64) -> bool {
        let mut seen = tag::retiring(live);
        loop {
            // SeqCst: as in `find`. On failure, the tag as it is now: taken back by another
            // reader (live), retired again by a later sweep, or freed.
            match slot
                .tag
                .compare_exchange(seen, live, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) if now == live => return true,
                Err(now) if now == tag::retiring(live) => seen = now,
                Err(_) => return false,
            }
        }
    }

    /// `f(cell, inserted)` of the key hashed to `hash`, claiming a free slot for it first if
    /// absent and `reserve()` agrees.
    pub(super) fn upsert<R>(
        &self,
        hash: u64,
        reserve: impl FnOnce() -> bool,
        make: impl Fn() -> C,
        f: impl FnOnce(&C, bool) -> R,
    ) -> Result<R, Missing> {
        let hash = spread(hash);
        let stripe = &self.inserts[self.home(hash) % self.inserts.len()];
        stripe.with(|| {
            let _pin = self.grace.pin();
            if let Some(slot) = self.find(hash) {
                return Ok(f(&slot.cell, false));
            }
            if !reserve() {
                return Err(Missing::Refused);
            }
            let live = tag::live(hash);
            let groups = self.run(hash).map(|index| {
                let segment = self.segment(index >> self.segment_shift, &make);
                &segment[index & ((1 << self.segment_shift) - 1)]
            });
            for slot in groups.flat_map(|group| &group.slots) {
                // SeqCst: as in `find`.
                let seen = slot.tag.load(Ordering::SeqCst);
                // SeqCst: as in `find`; Release at least, publishing the claim with the
                // cell (idle since the sweep that freed it, or never used) to the readers
                // that load this tag; Acquire, to see the freeing sweep's judgment of it.
                if tag::is_free(seen)
                    && slot
                        .tag
                        .compare_exchange(seen, live, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                {
                    // Relaxed: a count for display and heuristics.
                    self.held.fetch_add(1, Ordering::Relaxed);
                    return Ok(f(&slot.cell, true));
                }
            }
            Err(Missing::NoSlot)
        })
    }

    /// Frees every slot whose cell `judge` finds idle (`None`; else the reading it will be
    /// idle by, which `kept` receives), returning how many: retires them, waits for a grace
    /// period, then frees those still retiring that `judge` still finds idle (the others go
    /// back to live); then, holding every insertion lock, `renew`s the cell of every free
    /// slot, for the key that claims it next.
    pub(super) fn evict(
        &self,
        mut judge: impl FnMut(&C) -> Option<u64>,
        mut kept: impl FnMut(u64),
        renew: impl Fn(&C),
    ) -> usize {
        self.sweep.with(|| {
            let mut retired = 0;
            for slot in self.slots() {
                // SeqCst (the sweep's loads and CASes of tags): in the total order with the
                // readers' pins, see `Grace::pin`.
                let seen = slot.tag.load(Ordering::SeqCst);
                if !tag::is_live(seen) {
                    continue;
                }
                match judge(&slot.cell) {
                    Some(idle_at) => kept(idle_at),
                    None => {
                        // SeqCst: as above. A reader that loaded the live tag before this
                        // is waited for by the grace period below.
                        retired += usize::from(
                            slot.tag
                                .compare_exchange(
                                    seen,
                                    tag::retiring(seen),
                                    Ordering::SeqCst,
                                    Ordering::SeqCst,
                                )
                                .is_ok(),
                        );
                    }
                }
            }
            if retired == 0 {
                return 0;
            }
            self.grace.synchronize();
            // Holding every insertion lock from here, so that no key claims a slot freed
            // below before its cell is renewed.
            let freed = self.with_every_stripe(&self.inserts, || {
                let mut freed = 0;
                for slot in self.slots() {
                    // SeqCst: as above.
                    let seen = slot.tag.load(Ordering::SeqCst);
                    if !tag::is_retiring(seen) {
                        continue;
                    }
                    // Every reader that loaded the live tag is done, and every later one
                    // takes the slot back before touching the cell: while the tag stays
                    // retiring, the cell is what the judgment below sees.
                    let to = match judge(&slot.cell) {
                        None => tag::FREE,
                        Some(idle_at) => {
                            kept(idle_at);
                            tag::live(seen)
                        }
                    };
                    // SeqCst: as above. Fails if a reader took the slot back meanwhile: it
                    // stays live. (A claim of the freed slot takes an insertion lock after
                    // this sweep releases them all, so it sees the cell judged and renewed.)
                    let done = slot
                        .tag
                        .compare_exchange(seen, to, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                    freed += usize::from(done && to == tag::FREE);
                }
                if freed > 0 {
                    self.empty_free_runs(&renew);
                }
                freed
            });
            // Relaxed: a count for display and heuristics.
            self.held.fetch_sub(freed as u64, Ordering::Relaxed);
            freed
        })
    }

    /// Runs `f` holding every insertion lock of `stripes` (taken in order).
    fn with_every_stripe<R>(&self, stripes: &[AdminLock], f: impl FnOnce() -> R) -> R {
        match stripes.split_first() {
            None => f(),
            Some((first, rest)) => first.with(|| self.with_every_stripe(rest, f)),
        }
    }

    /// Turns every freed slot that an empty one follows in probe order back into an empty
    /// one, last slot first, so that lookups of absent keys stop early again after churn,
    /// and `renew`s the cell of every slot left free or made empty by a sweep. Safe while no
    /// insertion runs (the caller holds every stripe): no probe run passes through such a
    /// slot to a key beyond it (the next slot is empty, and an insertion takes the first
    /// free slot of its run), lookups that read it free or empty both go on to find nothing,
    /// and only insertions turn empty or free slots into anything else. No thread touches a
    /// free slot's cell meanwhile: the calls that found it live were waited for by the grace
    /// period that freed it, a lookup goes past a free slot, and the next claim takes an
    /// insertion lock, after this.
    fn empty_free_runs(&self, renew: &impl Fn(&C)) {
        // Whether the slot after the one at hand (in probe order) is empty; the wrap from the
        // last slot to the first is taken as not empty.
        let mut next_empty = false;
        for segment in self.segments.iter().rev() {
            let Some(groups) = segment.get() else {
                // Not allocated: all empty.
                next_empty = true;
                continue;
            };
            for slot in groups
                .iter()
                .rev()
                .flat_map(|group| group.slots.iter().rev())
            {
                // SeqCst (the load and the CAS): as every access to a tag.
                let seen = slot.tag.load(Ordering::SeqCst);
                if seen == tag::FREE {
                    renew(&slot.cell);
                }
                next_empty = seen == tag::EMPTY
                    || (seen == tag::FREE
                        && next_empty
                        && slot
                            .tag
                            .compare_exchange(
                                tag::FREE,
                                tag::EMPTY,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            )
                            .is_ok());
            }
        }
    }

    /// The slots of the segments allocated.
    fn slots(&self) -> impl Iterator<Item = &Slot<C>> {
        self.segments
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|groups| groups.iter().flat_map(|group| &group.slots))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn new() -> AtomicU64 {
        AtomicU64::new(0)
    }

    #[test]
    fn segments_are_allocated_as_keys_need_them() {
        let table = Table::new(1 << 20, new);
        assert_eq!(table.allocated(), 0);
        assert_eq!(table.read(1 << 63, |_| ()), None);
        assert_eq!(
            table.upsert(1 << 63, || true, new, |_, inserted| inserted),
            Ok(true)
        );
        let one = table.allocated();
        assert_eq!(one, (1 << table.segment_shift) * 64);
        assert_eq!(table.read(1 << 63, |_| ()), Some(()));
        // A key whose home lies in another segment.
        let segment = |hash: u64| table.home(spread(hash)) >> table.segment_shift;
        let other = (1..)
            .find(|&hash| segment(hash) != segment(1 << 63))
            .unwrap();
        assert_eq!(
            table.upsert(other, || true, new, |_, inserted| inserted),
            Ok(true)
        );
        assert_eq!(table.allocated(), 2 * one);
    }

    #[test]
    fn freed_slots_before_an_empty_one_become_empty_again() {
        // One group: keys 4, 8, 12 in slots 0, 1, 2; slot 3 empty.
        let table = Table::new(2, new);
        for hash in [4_u64, 8, 12] {
            assert_eq!(table.upsert(hash, || true, new, |_, _| ()), Ok(()));
        }
        let tags = |table: &Table<AtomicU64>| -> Vec<u64> {
            table
                .slots()
                .map(|slot| slot.tag.load(Ordering::Relaxed))
                .collect()
        };
        // Free keys 4 and 12: slot 2 (before the empty slot 3) becomes empty, slot 0 (before
        // key 8's) stays free, so that key 8 is still found past it.
        let hashes = [4_u64, 12];
        let freed = table.evict(|_| None, |_| {}, |_| {});
        assert_eq!(freed, 3); // all idle by this judge
        assert!(tags(&table).iter().all(|&t| t == tag::EMPTY));
        for hash in [4_u64, 8, 12] {
            assert_eq!(
                table.upsert(
                    hash,
                    || true,
                    new,
                    |cell, _| cell.store(hash, Ordering::Relaxed)
                ),
                Ok(())
            );
        }
        let freed = table.evict(
            |cell| (!hashes.contains(&cell.load(Ordering::Relaxed))).then_some(0),
            |_| {},
            |_| {},
        );
        assert_eq!(freed, 2);
        assert_eq!(
            tags(&table),
            [tag::FREE, tag::live(spread(8)), tag::EMPTY, tag::EMPTY]
        );
        assert_eq!(table.read(8, |cell| cell.load(Ordering::Relaxed)), Some(8));
        assert_eq!(table.read(4, |_| ()), None);
    }

    #[test]
    fn a_table_filled_to_its_bound_with_random_keys_finds_a_slot_for_each() {
        let n = 200_000;
        let table = Table::new(n, new);
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let hash = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            assert_eq!(table.upsert(hash, || true, new, |_, _| ()), Ok(()));
        }
        assert_eq!(table.len(), n);
    }

    #[test]
    fn tags_round_trip_their_states() {
        let hash = 0xdead_beef_cafe_f00d;
        let live = tag::live(hash);
        assert!(tag::is_live(live) && !tag::is_retiring(live) && !tag::is_free(live));
        let retiring = tag::retiring(live);
        assert!(tag::is_retiring(retiring) && !tag::is_live(retiring));
        assert_eq!(tag::live(retiring), live);
        assert!(tag::is_free(tag::EMPTY) && tag::is_free(tag::FREE));
        // A hash of zero still has a live tag distinct from the empty one.
        assert_ne!(tag::live(0), tag::EMPTY);
    }

    #[test]
    fn a_slot_of_an_eight_byte_cell_is_sixteen_bytes_four_to_a_line() {
        assert_eq!(std::mem::size_of::<Slot<AtomicU64>>(), 16);
        assert_eq!(std::mem::size_of::<Group<AtomicU64>>(), 64);
    }

    #[test]
    fn sizes_from_max_keys_with_a_fifth_more() {
        let table = Table::new(1000, new);
        assert_eq!(table.capacity(), 1200);
        assert_eq!(Table::new(1, new).capacity(), 4);
    }

    #[test]
    fn inserts_finds_and_frees_keys_sharing_one_home() {
        // One group: every key shares it.
        let table = Table::new(2, new);
        let hashes = [4_u64, 8, 12];
        for (i, &hash) in hashes.iter().enumerate() {
            let inserted = table.upsert(
                hash,
                || true,
                new,
                |cell, inserted| {
                    cell.store(i as u64 + 1, Ordering::Relaxed);
                    inserted
                },
            );
            assert_eq!(inserted, Ok(true));
        }
        assert_eq!(
            table.upsert(12, || true, new, |_, inserted| inserted),
            Ok(false)
        );
        assert_eq!(table.read(8, |cell| cell.load(Ordering::Relaxed)), Some(2));
        assert_eq!(table.read(16, |_| ()), None);
        // Free the key whose cell holds 2, then claim its slot for another.
        let freed = table.evict(
            |cell| (cell.load(Ordering::Relaxed) != 2).then_some(7),
            |at| assert_eq!(at, 7),
            |cell| cell.store(0, Ordering::Relaxed),
        );
        assert_eq!((freed, table.len()), (1, 2));
        assert_eq!(table.read(8, |_| ()), None);
        assert_eq!(table.read(12, |cell| cell.load(Ordering::Relaxed)), Some(3));
        assert_eq!(
            table.upsert(20, || true, new, |_, inserted| inserted),
            Ok(true)
        );
        assert_eq!(
            table.upsert(24, || false, new, |_, _| ()),
            Err(Missing::Refused)
        );
        assert_eq!(table.upsert(28, || true, new, |_, _| ()), Ok(()));
        assert_eq!(
            table.upsert(32, || true, new, |_, _| ()),
            Err(Missing::NoSlot)
        );
    }
}
