//! The packed words of the sliding log: head `[seq: 44 | label: 20]` and slots (`Entry`,
//! `Group`, `Stamp`). Field by field, and why no slot CAS has an ABA:
//! [the guide](crate::guide::log).

use std::time::Duration;

pub(crate) const SEQ_BITS: u32 = 44;
/// Bits of a configuration label (a [`LogConfig`](super::LogConfig) change number, mod 2^20).
pub(crate) const LABEL_BITS: u32 = 20;
const SEQ_SHIFT: u32 = LABEL_BITS;
pub(crate) const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
pub(crate) const LABEL_MASK: u64 = (1 << LABEL_BITS) - 1;

const _: () = assert!(SEQ_BITS + LABEL_BITS == 64);

/// Bits of a group's size: the largest limit is `2^N_BITS - 1`.
const N_BITS: u32 = 20;
const N_MASK: u64 = (1 << N_BITS) - 1;
/// Bits of the lap tag of groups and stamps.
pub(crate) const LAP_BITS: u32 = 42;
const LAP_SHIFT: u32 = 64 - LAP_BITS;
const KIND_MASK: u64 = 0b11;
const GROUP: u64 = 0b01;
const STAMP: u64 = 0b11;

const _: () = assert!(LAP_BITS + N_BITS + 2 == 64);
const _: () = assert!(LABEL_BITS <= N_BITS);

/// The largest limit (and ring capacity) of a sliding log: `2^20 - 1`, 8 MiB of ring.
pub(crate) const MAX_LIMIT: u64 = N_MASK;

/// The smallest ring: laps of a 44-bit seq must fit the 42-bit lap tag.
pub(crate) const MIN_RING: u64 = 1 << (SEQ_BITS - LAP_BITS);

/// The slots of a ring with room for limits up to `capacity` (at least 1): the power of two
/// above it (one slot more than the limit, so that a claim never overwrites an entry a
/// decision reads), at least `MIN_RING`.
pub(crate) fn slots_for(capacity: u64) -> u64 {
    (capacity.max(1) + 1).next_power_of_two().max(MIN_RING)
}

/// Timestamps saturate here (2^61 ns, about 73 years after the clock's origin): time then
/// stands still, which can only refuse more, never admit more.
pub(crate) const MAX_STAMP: u64 = 1 << 61;

/// The time from `now` until the log's time reaches `expiry` (when an entry stamped
/// `expiry - window` leaves the window): [`NEVER`](crate::epoch::NEVER) past [`MAX_STAMP`],
/// where the log's time stands still, so an entry expiring later stays in the window for
/// ever and a refusal waiting on it would be refused again at every reading.
pub(crate) fn retry_until(expiry: u64, now: u64) -> Duration {
    if expiry > MAX_STAMP {
        return crate::epoch::NEVER;
    }
    Duration::from_nanos(expiry.saturating_sub(now))
}

/// Expiries are at most `MAX_STAMP + MAX_WINDOW_NANOS`, within the entry's 62 bits.
const _: () = assert!(MAX_STAMP + crate::validate::MAX_WINDOW_NANOS < 1 << 62);

/// An unpacked head word `[seq: 44 | label: 20]`: the next sequence number to claim, and
/// the label of the configuration the log is decided under (see the guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) label: u64,
}

impl Head {
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.seq <= SEQ_MASK && self.label <= LABEL_MASK);
        (self.seq << SEQ_SHIFT) | self.label
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            seq: word >> SEQ_SHIFT,
            label: word & LABEL_MASK,
        }
    }

    /// The head moved `by` seqs forward, under the same label.
    pub(crate) fn advanced(self, by: u64) -> Self {
        Self {
            seq: seq_add(self.seq, by),
            ..self
        }
    }
}

/// `seq + d` modulo 2^44.
pub(crate) fn seq_add(seq: u64, d: u64) -> u64 {
    seq.wrapping_add(d) & SEQ_MASK
}

/// `seq - d` modulo 2^44.
pub(crate) fn seq_sub(seq: u64, d: u64) -> u64 {
    seq.wrapping_sub(d) & SEQ_MASK
}

/// An unpacked slot word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// An admitted permit expiring at `expiry`, in a lap of this `parity`.
    Entry { expiry: u64, parity: u64 },
    /// The first seq (in lap `lap`) of a group of `n` permits.
    Group { lap: u64, n: u64 },
    /// The free slot of a seq in lap `lap`, stamped by a relabel to `label`.
    Stamp { lap: u64, label: u64 },
}

impl Slot {
    /// What every slot holds before the first lap: an entry that expired at time 0, in the
    /// (odd) lap before lap 0.
    pub(crate) const EMPTY: Slot = Slot::Entry {
        expiry: 0,
        parity: 1,
    };

    pub(crate) fn pack(self) -> u64 {
        match self {
            Slot::Entry { expiry, parity } => {
                debug_assert!(expiry < 1 << 62 && parity <= 1);
                (expiry << 2) | (parity << 1)
            }
            Slot::Group { lap, n } => {
                debug_assert!(lap < 1 << LAP_BITS && (2..=N_MASK).contains(&n));
                (lap << LAP_SHIFT) | (n << 2) | GROUP
            }
            Slot::Stamp { lap, label } => {
                debug_assert!(lap < 1 << LAP_BITS && label <= LABEL_MASK);
                (lap << LAP_SHIFT) | (label << 2) | STAMP
            }
        }
    }

    pub(crate) fn unpack(word: u64) -> Self {
        match word & KIND_MASK {
            GROUP => Slot::Group {
                lap: word >> LAP_SHIFT,
                n: (word >> 2) & N_MASK,
            },
            STAMP => Slot::Stamp {
                lap: word >> LAP_SHIFT,
                label: (word >> 2) & N_MASK,
            },
            _ => Slot::Entry {
                expiry: word >> 2,
                parity: (word >> 1) & 1,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_round_trips_at_field_limits() {
        for head in [
            Head { seq: 0, label: 0 },
            Head {
                seq: SEQ_MASK,
                label: LABEL_MASK,
            },
            Head {
                seq: 12345,
                label: 7,
            },
        ] {
            assert_eq!(Head::unpack(head.pack()), head);
        }
    }

    #[test]
    fn head_wraps_without_touching_the_label() {
        let head = Head {
            seq: SEQ_MASK - 1,
            label: 5,
        };
        let moved = head.advanced(3);
        assert_eq!((moved.seq, moved.label), (1, 5));
        assert_eq!(Head::unpack(moved.pack()), moved);
        assert_eq!(seq_sub(1, 3), SEQ_MASK - 1);
    }

    #[test]
    fn slot_forms_round_trip_and_stay_apart() {
        let forms = [
            Slot::EMPTY,
            Slot::Entry {
                expiry: (1 << 62) - 1,
                parity: 0,
            },
            Slot::Entry {
                expiry: MAX_STAMP + crate::validate::MAX_WINDOW_NANOS,
                parity: 1,
            },
            Slot::Group {
                lap: (1 << LAP_BITS) - 1,
                n: MAX_LIMIT,
            },
            Slot::Group { lap: 0, n: 2 },
            Slot::Stamp {
                lap: (1 << LAP_BITS) - 1,
                label: LABEL_MASK,
            },
            Slot::Stamp { lap: 3, label: 0 },
        ];
        for form in forms {
            assert_eq!(Slot::unpack(form.pack()), form);
        }
        let words: std::collections::HashSet<u64> = forms.iter().map(|f| f.pack()).collect();
        assert_eq!(words.len(), forms.len());
        // A group and a stamp with the same lap and number are different words.
        assert_ne!(
            Slot::Group { lap: 5, n: 2 }.pack(),
            Slot::Stamp { lap: 5, label: 2 }.pack()
        );
    }
}
