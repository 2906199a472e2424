//! Loom models of `ConcurrencyCell`s sharing one `ConcurrencyConfig`: every interleaving of a
//! few acquisitions, releases, snapshots and limit changes, on one or two cells, must be
//! explained by a sequential run of `ConcurrencySpec` (one per cell, all under the shared
//! limit) in which each thread's steps keep their program order. A thread that changes the
//! limit and then touches a cell orders the two, so a decision made under the old limit
//! that lands after them has no explanation.
//!
//! Run (well under a minute):
//! `bash loom-tests/run concurrency_cells::`

use std::sync::Arc;

use ringlimit::cell::Compact;
use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
use ringlimit::spec::{ConcurrencySpec, Spec};
use ringlimit::ConcurrencyQuota;

/// One step of a model thread.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `cells[c].try_acquire(&config, n)`; the permits taken are the thread's to release.
    Acquire(usize, u64),
    /// `cells[c].release(&config, k)` of all `k` permits this thread holds on cell `c`
    /// (setup permits and its own admissions); nothing if it holds none.
    Release(usize),
    /// `config.set_limit(l)`.
    SetLimit(u64),
    /// `cells[c].available(&config)`.
    Available(usize),
}

/// What a step returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Admitted,
    Refused,
    ExceedsLimit,
    /// A release of this many permits (0: none held, no call).
    Released(u64),
    Done,
    Available(u64),
}

/// A model: a configuration of `limit`, `cells` cells made under it, the `setup` permits
/// `(thread, cell, n)` taken alone, then the configuration changed to each of `reconfigure`
/// in turn, alone; then `threads` race.
struct Model {
    limit: u64,
    cells: usize,
    setup: &'static [(usize, usize, u64)],
    reconfigure: &'static [u64],
    threads: &'static [&'static [Op]],
}

/// The sequential state: one spec per cell (all with the shared limit) and what each thread
/// holds on each cell.
#[derive(Clone)]
struct Sequential {
    cells: Vec<ConcurrencySpec>,
    held: Vec<Vec<u64>>,
}

impl Model {
    /// Explores every interleaving; panics on a violation.
    fn check(&'static self, invariant: impl Fn(&[Vec<Seen>]) + Send + Sync + 'static) {
        let invariant = Arc::new(invariant);
        loom::model(move || {
            let config = Arc::new(ConcurrencyConfig::new(
                ConcurrencyQuota::new(self.limit).unwrap(),
            ));
            let cells: Arc<Vec<ConcurrencyCell<Compact>>> = Arc::new(
                (0..self.cells)
                    .map(|_| ConcurrencyCell::with_layout(&config))
                    .collect(),
            );
            let mut held = vec![vec![0; self.cells]; self.threads.len()];
            for &(t, c, n) in self.setup {
                assert!(cells[c].try_acquire(&config, n).unwrap());
                held[t][c] += n;
            }
            for &l in self.reconfigure {
                config.set_limit(l).unwrap();
            }
            let handles: Vec<_> = self
                .threads
                .iter()
                .zip(held)
                .map(|(&ops, mut held)| {
                    let (config, cells) = (config.clone(), cells.clone());
                    loom::thread::spawn(move || {
                        ops.iter()
                            .map(|&op| match op {
                                Op::Acquire(c, n) => match cells[c].try_acquire(&config, n) {
                                    Ok(true) => {
                                        held[c] += n;
                                        Seen::Admitted
                                    }
                                    Ok(false) => Seen::Refused,
                                    Err(_) => Seen::ExceedsLimit,
                                },
                                Op::Release(c) => {
                                    let k = std::mem::take(&mut held[c]);
                                    if k > 0 {
                                        cells[c].release(&config, k);
                                    }
                                    Seen::Released(k)
                                }
                                Op::SetLimit(l) => {
                                    config.set_limit(l).unwrap();
                                    Seen::Done
                                }
                                Op::Available(c) => Seen::Available(cells[c].available(&config)),
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let seen: Vec<Vec<Seen>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let end: Vec<u64> = cells.iter().map(|cell| cell.in_flight(&config)).collect();
            let limit = config.limit();
            assert!(
                self.linearizable(&seen, &end, limit),
                "no sequential run of the spec explains {seen:?} ending at in_flight {end:?}, limit {limit}"
            );
            invariant(&seen);
        });
    }

    /// Whether some order of the steps (each thread's in program order) makes the specs
    /// return `seen` and end with `end` in flight and `limit`.
    fn linearizable(&self, seen: &[Vec<Seen>], end: &[u64], limit: u64) -> bool {
        let mut state = Sequential {
            cells: vec![ConcurrencySpec::new(self.limit).unwrap(); self.cells],
            held: vec![vec![0; self.cells]; self.threads.len()],
        };
        for &(t, c, n) in self.setup {
            assert!(state.cells[c].decide(0, n).unwrap().is_admitted());
            state.held[t][c] += n;
        }
        for &l in self.reconfigure {
            for cell in &mut state.cells {
                cell.set_limit(0, l).unwrap();
            }
        }
        self.explore(&state, &mut vec![0; self.threads.len()], seen, end, limit)
    }

    fn explore(
        &self,
        state: &Sequential,
        next: &mut [usize],
        seen: &[Vec<Seen>],
        end: &[u64],
        limit: u64,
    ) -> bool {
        if next
            .iter()
            .zip(self.threads)
            .all(|(&i, ops)| i == ops.len())
        {
            let in_flight: Vec<u64> = state.cells.iter().map(|c| c.in_flight()).collect();
            return in_flight == end && state.cells.iter().all(|c| c.limit() == limit);
        }
        for t in 0..self.threads.len() {
            let Some(&op) = self.threads[t].get(next[t]) else {
                continue;
            };
            let mut state = state.clone();
            let got = match op {
                Op::Acquire(c, n) => match state.cells[c].decide(0, n) {
                    Ok(d) if d.is_admitted() => {
                        state.held[t][c] += n;
                        Seen::Admitted
                    }
                    Ok(_) => Seen::Refused,
                    Err(_) => Seen::ExceedsLimit,
                },
                Op::Release(c) => {
                    let k = std::mem::take(&mut state.held[t][c]);
                    state.cells[c].release(k);
                    Seen::Released(k)
                }
                Op::SetLimit(l) => {
                    for cell in &mut state.cells {
                        cell.set_limit(0, l).unwrap();
                    }
                    Seen::Done
                }
                Op::Available(c) => Seen::Available(state.cells[c].available(0)),
            };
            if got != seen[t][next[t]] {
                continue;
            }
            next[t] += 1;
            let found = self.explore(&state, next, seen, end, limit);
            next[t] -= 1;
            if found {
                return true;
            }
        }
        false
    }
}

/// (a) A stale acquisition racing a lowered limit, with a release in between (the ABA
/// case). Limit 2, one cell. Thread 0 asks for 2 permits; thread 1 takes 1, lowers the limit
/// to 1, then releases its permit, which returns the count to the value thread 0 may have
/// read. The outcomes some sequential order allows, and nothing else:
///
/// - thread 0 first: admitted; thread 1 refused (2 + 1 > 2), releases nothing;
/// - thread 0 after thread 1's acquisition: refused (1 + 2 > 2); thread 1 releases 1;
/// - thread 0 after the lowering: `ExceedsLimit` (2 > 1); thread 1 releases 1.
///
/// Never both admitted: that is thread 0's 2 permits, decided under the old limit, landing
/// after the lowering returned and after thread 1's release (which converted the cell).
#[test]
fn a_stale_acquisition_races_a_lowered_limit_and_a_release() {
    static MODEL: Model = Model {
        limit: 2,
        cells: 1,
        setup: &[],
        reconfigure: &[],
        threads: &[
            &[Op::Acquire(0, 2)],
            &[Op::Acquire(0, 1), Op::SetLimit(1), Op::Release(0)],
        ],
    };
    MODEL.check(|seen| {
        let released = |k| vec![Seen::Admitted, Seen::Done, Seen::Released(k)];
        let allowed = [
            (
                Seen::Admitted,
                vec![Seen::Refused, Seen::Done, Seen::Released(0)],
            ),
            (Seen::Refused, released(1)),
            (Seen::ExceedsLimit, released(1)),
        ];
        assert!(
            allowed
                .iter()
                .any(|(first, second)| seen[0][0] == *first && seen[1] == *second),
            "{seen:?}"
        );
    });
}

/// (b) Two cells share the configuration; a 2-permit acquisition on each races the lowering
/// of the limit from 2 to 1, after which the lowering thread reads both cells. For each cell
/// independently: admitted (before the lowering) and then 0 available, or `ExceedsLimit`
/// (after it) and then 1 available. Both cells see the one store: neither is decided under
/// the old limit once the lowering thread has read it under the new one.
#[test]
fn two_cells_race_one_reconfiguration() {
    static MODEL: Model = Model {
        limit: 2,
        cells: 2,
        setup: &[],
        reconfigure: &[],
        threads: &[
            &[Op::SetLimit(1), Op::Available(0), Op::Available(1)],
            &[Op::Acquire(0, 2)],
            &[Op::Acquire(1, 2)],
        ],
    };
    MODEL.check(|seen| {
        for cell in 0..2 {
            let pair = (seen[cell + 1][0], seen[0][cell + 1]);
            assert!(
                pair == (Seen::Admitted, Seen::Available(0))
                    || pair == (Seen::ExceedsLimit, Seen::Available(1)),
                "cell {cell}: {seen:?}"
            );
        }
    });
}

/// (c) A release races a conversion. Limit 2, one permit out (thread 1's); thread 0 lowers the
/// limit to 1 and reads the cell (converting it), thread 1 releases its permit, and may
/// convert the cell itself. The release is never lost: the cell ends empty, and thread 0
/// sees 1 available (release first) or 0 (its own read first).
#[test]
fn a_release_races_a_conversion() {
    static MODEL: Model = Model {
        limit: 2,
        cells: 1,
        setup: &[(1, 0, 1)],
        reconfigure: &[],
        threads: &[&[Op::SetLimit(1), Op::Available(0)], &[Op::Release(0)]],
    };
    MODEL.check(|seen| {
        assert!(matches!(seen[0][1], Seen::Available(0 | 1)), "{seen:?}");
        assert_eq!(seen[1][0], Seen::Released(1));
    });
}

/// (d) Why the label is an epoch, not the limit: limit 1 → 2 (before the threads start, the
/// cell untouched) → 1 again. Thread 2 reads the cell under limit 1 and the configuration at
/// 2; thread 1 converts the cell to 2 and is about to admit 2 permits; thread 0 lowers the
/// limit back to 1, takes a permit and releases it. Labelled by limit, the cell would be back
/// at `[1 | 0]`, so thread 2's stale conversion to `[2 | 0]` would succeed and let thread 1's
/// 2 permits in under limit 1 after thread 0's acquisition was admitted under it: no
/// sequential order explains both admissions. Labelled by epoch (0, 1, 2), the stale
/// conversion fails. Allowed: thread 1 admitted only if thread 0's acquisition is refused.
#[test]
fn a_limit_changed_and_changed_back_is_a_new_epoch() {
    static MODEL: Model = Model {
        limit: 1,
        cells: 1,
        setup: &[],
        reconfigure: &[2],
        threads: &[
            &[Op::SetLimit(1), Op::Acquire(0, 1), Op::Release(0)],
            &[Op::Acquire(0, 2)],
            &[Op::Available(0)],
        ],
    };
    MODEL.check(|seen| {
        if seen[1][0] == Seen::Admitted {
            assert_eq!(seen[0][1], Seen::Refused, "{seen:?}");
        }
    });
}
