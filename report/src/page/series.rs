//! Time series of a run or a plan, binned adaptively (about
//! [`TARGET_BINS`] bins of a round width over its span). Both sources have
//! the load: requests in flight and input and output tokens/s. Only a run
//! has what was measured ([`Measured`]): TTFT p50/p99 of the requests sent
//! in each bin, failed requests by error class, and the server-reported
//! cache-hit ratio; a plan's series has none of it (absent, not zeros).
//! A run's warmups are left out, as in the summary; a plan's are counted
//! in flight, as its planned peak counts them.

use std::collections::BTreeMap;

use arbor_engine::time::NANOS_PER_MS;
use serde::Serialize;

use super::cdf::round_secs;
use super::record::{Status, Turn};

/// Bins aimed at over the span.
pub const TARGET_BINS: u64 = 200;

#[derive(Debug, Default, Serialize)]
pub struct Series {
    /// Width of a bin, seconds.
    pub bin_s: f64,
    /// Start of each bin, seconds from the epoch (the run's, or the
    /// plan's virtual clock's).
    pub t_s: Vec<f64>,
    /// Most requests sent and not yet done at once within the bin.
    pub inflight_max: Vec<u32>,
    /// Requests in flight, averaged over the bin's time.
    pub inflight_mean: Vec<f64>,
    /// Output tokens of successful requests, spread over their streaming
    /// (first content to done), per second.
    pub output_tok_s: Vec<f64>,
    /// Input tokens of successful requests, spread over their prefill
    /// (sent to first content), per second.
    pub input_tok_s: Vec<f64>,
    /// What a run measured; `None` (no keys at all) for a plan.
    #[serde(flatten)]
    pub measured: Option<Measured>,
}

/// The series only a run has.
#[derive(Debug, Default, Serialize)]
pub struct Measured {
    /// TTFT percentiles of the successful requests sent in the bin.
    pub ttft_p50_s: Vec<Option<f64>>,
    pub ttft_p99_s: Vec<Option<f64>>,
    /// Failed requests by error class, by the bin of their end.
    pub errors: BTreeMap<String, Vec<u32>>,
    /// Cached over input tokens of the successful requests sent in the
    /// bin whose usage reported cached tokens.
    pub cache_hit: Vec<Option<f64>>,
}

/// Bins of one width from the epoch to the end of a span.
#[derive(Debug, Clone, Copy)]
struct Bins {
    width: u64,
    count: usize,
}

impl Bins {
    /// Bins covering every turn (up to the last `done`).
    fn over<'a>(turns: impl Iterator<Item = &'a Turn>) -> Bins {
        let span = turns.map(|t| t.done).max().unwrap_or(0);
        let width = bin_width(span);
        Bins {
            width,
            count: (span / width + 1) as usize,
        }
    }

    /// The bin holding instant `t` (the last one for any later instant).
    fn of(&self, t: u64) -> usize {
        ((t / self.width) as usize).min(self.count - 1)
    }
}

/// A round bin width (1, 2 or 5 times a power of ten, at least 1 ms) that
/// cuts `span` nanoseconds into about [`TARGET_BINS`] bins.
pub fn bin_width(span: u64) -> u64 {
    let want = (span / TARGET_BINS).max(NANOS_PER_MS);
    let mut unit = NANOS_PER_MS;
    loop {
        for m in [1, 2, 5] {
            if unit * m >= want {
                return unit * m;
            }
        }
        unit *= 10;
    }
}

/// A run's series of `turns` (warmups left out); `classes[i]` is the
/// error class of error `i` (a turn's `error`).
pub fn build<'a>(turns: impl Iterator<Item = &'a Turn> + Clone, classes: &[&str]) -> Series {
    let measured = || turns.clone().filter(|t| t.status != Status::Warmup);
    let bins = Bins::over(measured());
    Series {
        measured: Some(measure(measured(), bins, classes)),
        ..load(measured(), bins)
    }
}

/// A plan's series of `turns` (every turn it sent, warmups included in
/// flight): the load only.
pub fn planned<'a>(turns: impl Iterator<Item = &'a Turn> + Clone) -> Series {
    load(turns.clone(), Bins::over(turns))
}

/// Requests in flight over every turn; tokens of the successful ones.
fn load<'a>(turns: impl Iterator<Item = &'a Turn> + Clone, bins: Bins) -> Series {
    let width = bins.width;
    let (inflight_max, inflight_mean) = in_flight(turns.clone(), width, bins.count);
    let mut output = vec![0.0; bins.count];
    let mut input = vec![0.0; bins.count];
    for t in turns.filter(|t| t.status == Status::Ok) {
        let first = t.first.unwrap_or(t.done);
        spread(&mut output, width, first, t.done, t.output_tokens as f64);
        spread(&mut input, width, t.sent, first, t.input_tokens as f64);
    }
    let per_s = 1e9 / width as f64;
    let rate = |v: Vec<f64>| v.into_iter().map(|x| (x * per_s).round()).collect();
    Series {
        bin_s: round_secs(width),
        t_s: (0..bins.count as u64)
            .map(|i| round_secs(i * width))
            .collect(),
        inflight_max,
        inflight_mean,
        output_tok_s: rate(output),
        input_tok_s: rate(input),
        measured: None,
    }
}

/// TTFT percentiles, failures by class and cache hits per bin.
fn measure<'a>(turns: impl Iterator<Item = &'a Turn>, bins: Bins, classes: &[&str]) -> Measured {
    let mut ttfts: Vec<(usize, u64)> = Vec::new();
    let mut errors: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut cached = vec![(0u64, 0u64); bins.count];
    for t in turns {
        match t.status {
            Status::Ok => {
                if let Some(ttft) = t.ttft {
                    ttfts.push((bins.of(t.sent), ttft));
                }
                if let Some(c) = t.cached_tokens {
                    let slot = &mut cached[bins.of(t.sent)];
                    slot.0 += c;
                    slot.1 += t.input_tokens;
                }
            }
            Status::Error => {
                let class = t
                    .error
                    .and_then(|e| classes.get(e as usize))
                    .copied()
                    .unwrap_or("unknown");
                let counts = errors
                    .entry(class.to_string())
                    .or_insert_with(|| vec![0; bins.count]);
                counts[bins.of(t.done)] += 1;
            }
            Status::Cancelled | Status::Warmup => {}
        }
    }
    let (ttft_p50_s, ttft_p99_s) = percentiles_by_bin(ttfts, bins.count);
    Measured {
        ttft_p50_s,
        ttft_p99_s,
        errors,
        cache_hit: cached
            .into_iter()
            .map(|(c, i)| (i > 0).then(|| (c as f64 / i as f64 * 1e4).round() / 1e4))
            .collect(),
    }
}

/// Adds `amount` to the bins over `[from, to)`, in proportion to the time
/// spent in each (all to `from`'s bin for an instant).
fn spread(bins: &mut [f64], width: u64, from: u64, to: u64, amount: f64) {
    let last = bins.len() - 1;
    if to <= from {
        bins[((from / width) as usize).min(last)] += amount;
        return;
    }
    let per_ns = amount / (to - from) as f64;
    let mut at = from;
    while at < to {
        let i = (at / width) as usize;
        let end = ((i as u64 + 1) * width).min(to);
        bins[i.min(last)] += per_ns * (end - at) as f64;
        at = end;
    }
}

/// Requests in flight per bin: the most at once and the time average.
/// A request is in flight over `[sent, done)`.
fn in_flight<'a>(
    turns: impl Iterator<Item = &'a Turn>,
    width: u64,
    bins: usize,
) -> (Vec<u32>, Vec<f64>) {
    let mut events: Vec<(u64, i32)> = turns.flat_map(|t| [(t.sent, 1), (t.done, -1)]).collect();
    // Ends before starts at one instant: a request done as another is
    // sent never overlaps it.
    events.sort_unstable();
    let mut max = vec![0u32; bins];
    let mut area = vec![0f64; bins];
    let (mut level, mut at) = (0i64, 0u64);
    let last = bins - 1;
    for (time, delta) in events {
        while at < time {
            let i = ((at / width) as usize).min(last);
            let end = ((i as u64 + 1) * width).min(time);
            area[i] += level as f64 * (end.max(at) - at) as f64;
            max[i] = max[i].max(level.max(0) as u32);
            if end <= at {
                break;
            }
            at = end;
        }
        at = time;
        level += i64::from(delta);
        let i = ((time / width) as usize).min(last);
        max[i] = max[i].max(level.max(0) as u32);
    }
    let mean = area
        .into_iter()
        .map(|a| (a / width as f64 * 100.0).round() / 100.0)
        .collect();
    (max, mean)
}

/// Nearest-rank p50 and p99 of the values of each bin.
fn percentiles_by_bin(
    mut values: Vec<(usize, u64)>,
    bins: usize,
) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    values.sort_unstable();
    let mut p50 = vec![None; bins];
    let mut p99 = vec![None; bins];
    for group in values.chunk_by(|a, b| a.0 == b.0) {
        let rank = |q: f64| ((q * group.len() as f64).ceil() as usize).clamp(1, group.len()) - 1;
        let i = group[0].0;
        p50[i] = Some(round_secs(group[rank(0.50)].1));
        p99[i] = Some(round_secs(group[rank(0.99)].1));
    }
    (p50, p99)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(sent_ms: u64, done_ms: u64) -> Turn {
        Turn {
            request: 0,
            turn: 0,
            status: Status::Ok,
            eligible: sent_ms * NANOS_PER_MS,
            sent: sent_ms * NANOS_PER_MS,
            first: Some(sent_ms * NANOS_PER_MS),
            done: done_ms * NANOS_PER_MS,
            queue_wait: 0,
            ttft: Some(NANOS_PER_MS),
            input_tokens: 10,
            output_tokens: 100,
            cached_tokens: Some(5),
            error: None,
        }
    }

    #[test]
    fn bin_widths_are_round() {
        assert_eq!(bin_width(0), NANOS_PER_MS);
        assert_eq!(bin_width(1_000 * NANOS_PER_MS), 5 * NANOS_PER_MS);
        assert_eq!(bin_width(3_600_000 * NANOS_PER_MS), 20_000 * NANOS_PER_MS);
    }

    #[test]
    fn in_flight_and_tokens_add_up() {
        // Two overlapping requests over 200 ms (1 ms bins).
        let s = build([turn(0, 100), turn(50, 200)].iter(), &[]);
        assert_eq!(s.bin_s, 0.001);
        assert_eq!(s.inflight_max.iter().max(), Some(&2));
        assert_eq!(s.inflight_max[10], 1);
        assert_eq!(s.inflight_max[60], 2);
        assert_eq!(s.inflight_mean[60], 2.0);
        let tokens: f64 = s.output_tok_s.iter().map(|r| r * s.bin_s).sum();
        assert!((tokens - 200.0).abs() < 1.0, "{tokens}");
        let m = s.measured.as_ref().expect("a run's series is measured");
        assert_eq!(m.cache_hit[0], Some(0.5));
        assert_eq!(m.ttft_p50_s[50], Some(0.001));
        assert_eq!(m.ttft_p99_s[1], None);
    }

    #[test]
    fn a_plan_has_the_load_and_nothing_measured() {
        let mut warm = turn(0, 100);
        warm.status = Status::Warmup;
        let turns = [warm, turn(50, 200)];
        let s = planned(turns.iter());
        assert!(s.measured.is_none());
        // The warmup is in flight beside the other turn...
        assert_eq!(s.inflight_max[60], 2);
        // ...but its tokens are not demand.
        let tokens: f64 = s.output_tok_s.iter().map(|r| r * s.bin_s).sum();
        assert!((tokens - 100.0).abs() < 1.0, "{tokens}");
        let json = serde_json::to_value(&s).unwrap();
        assert!(json.get("ttft_p50_s").is_none() && json.get("cache_hit").is_none());
        assert!(json.get("inflight_max").is_some());
    }
}
