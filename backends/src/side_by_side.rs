//! Independent virtual plans run side by side on the machine's cores: a
//! capacity sweep's load points (`arbor capacity --sweep`), each its own
//! scheduler and model over shared, read-only inputs.
//!
//! Which worker runs which point changes nothing: a point's result
//! depends on its index only, and results come back in index order, so
//! the output is the same on one core or many.
//!
//! Must not: share anything mutable between points, or decide what a
//! point is (the caller's `plan`).

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Workers to use: the cores the process may run on (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// `plan(i)` for every `i` in `0..count`, on up to `workers` threads
/// (each takes the next index not yet taken), in index order.
pub fn plan_each<T: Send>(
    count: usize,
    workers: usize,
    plan: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let workers = workers.clamp(1, count.max(1));
    if workers == 1 {
        return (0..count).map(plan).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count {
                            break mine;
                        }
                        mine.push((i, plan(i)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| match handle.join() {
                Ok(mine) => mine,
                // A panicking point: raise it here, as one worker would.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_index_order_whatever_the_workers() {
        let square = |i: usize| {
            // Uneven work, so workers finish out of order.
            let spin: u64 = (0..(i % 7) * 10_000).map(|x| x as u64).sum();
            (i * i, spin)
        };
        let one = plan_each(50, 1, square);
        for workers in [2, 3, 8, 100] {
            assert_eq!(plan_each(50, workers, square), one, "{workers} workers");
        }
        assert_eq!(one[7].0, 49);
        assert!(plan_each(0, 4, square).is_empty());
    }
}
