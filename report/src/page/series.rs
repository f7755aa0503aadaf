//! Time series of a run or a plan, binned adaptively (about
//! [`TARGET_BINS`] bins of a round width over its span), built while the
//! turns stream by ([`SeriesBuilder`]) in memory bounded whatever the
//! run's length: turns are added to time cells ([`super::cells`]) and the
//! page's bins are sums of cells. Both sources have the load: requests in
//! flight and input and output tokens/s. Only a run has what was measured
//! ([`Measured`]): TTFT p50/p99 of the requests sent in each bin, failed
//! requests by error class, and the server-reported cache-hit ratio; a
//! plan's series has none of it (absent, not zeros). A run's warmups are
//! left out, as in the summary (the caller does not add them); a plan's
//! are counted in flight, as its planned peak counts them.
//!
//! Precision: token rates, the mean in flight, error counts and cache
//! hits are exact sums. The most in flight within a bin is read at the
//! bin's sample instants (at least 65 a bin, every cell boundary) and is
//! at least the bin's mean rounded up: a lower bound of the true peak
//! that misses only a spike shorter than a cell. TTFT percentiles are
//! exact up to 100,000 values, then within 0.5 % ([`super::sketch`]).
use std::collections::BTreeMap;

use arbor_engine::time::NANOS_PER_MS;
use serde::Serialize;

use super::cdf::round_secs;
use super::cells::{coarse_cell, coarse_sample, merge_tens, slot, Cells, Spread};
use super::record::{Status, Turn};
use super::sketch::CellValues;

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

/// Cells of the load (in flight, tokens): a page bin spans at least 65.
const LOAD_CELLS: u64 = 1 << 17;
/// Cells of what a run measured (TTFT percentiles, errors, cache hits):
/// a page bin spans at least one.
const MEASURED_CELLS: u64 = 2_000;

/// A round bin width (1, 2 or 5 times a power of ten, at least 1 ms) that
/// cuts `span` nanoseconds into about [`TARGET_BINS`] bins.
pub fn bin_width(span: u64) -> u64 {
    let want = (span / TARGET_BINS).max(NANOS_PER_MS);
    let mut unit = NANOS_PER_MS;
    loop {
        for m in [1, 2, 5] {
            if unit.saturating_mul(m) >= want {
                return unit.saturating_mul(m);
            }
        }
        unit = unit.saturating_mul(10);
    }
}

/// A plan's series of `turns` (every turn it sent, warmups included in
/// flight): the load only.
pub fn planned<'a>(turns: impl Iterator<Item = &'a Turn>) -> Series {
    let mut series = SeriesBuilder::plan();
    for t in turns {
        series.add(t, None);
    }
    series.finish()
}

/// A series as turns are added.
#[derive(Debug)]
pub struct SeriesBuilder {
    load: Load,
    /// A run's; `None` for a plan.
    measured: Option<Measuring>,
    /// The last `done` of the turns added.
    end: u64,
}

impl SeriesBuilder {
    /// A run's series: the load and what was measured.
    pub fn run() -> SeriesBuilder {
        SeriesBuilder {
            measured: Some(Measuring::new()),
            ..SeriesBuilder::plan()
        }
    }

    /// A plan's series: the load only.
    pub fn plan() -> SeriesBuilder {
        SeriesBuilder {
            load: Load::new(),
            measured: None,
            end: 0,
        }
    }

    /// Adds a turn; `class` is a failed turn's error class.
    pub fn add(&mut self, turn: &Turn, class: Option<&str>) {
        self.end = self.end.max(turn.done);
        self.load.add(turn);
        if let Some(m) = self.measured.as_mut() {
            m.add(turn, class);
        }
    }

    /// The series, in bins of a round width over the turns' span.
    pub fn finish(self) -> Series {
        let mut unit = self.load.cells.width();
        if let Some(m) = &self.measured {
            unit = unit.max(m.cells.width());
        }
        // A whole number of cells of both kinds (the cells' widths are
        // powers of ten no wider than the round width; see cells.rs).
        let width = bin_width(self.end).div_ceil(unit).saturating_mul(unit);
        let count = (self.end / width + 1) as usize;
        Series {
            measured: self.measured.map(|m| m.finish(width, count)),
            ..self.load.finish(width, count)
        }
    }
}

/// Requests in flight and tokens, per load cell.
#[derive(Debug)]
struct Load {
    cells: Cells,
    /// Change of the level in flight at each sample instant.
    level: Vec<i64>,
    /// Time in flight (nanoseconds, summed over requests).
    busy: Spread,
    output: Spread,
    input: Spread,
}

impl Load {
    fn new() -> Load {
        Load {
            cells: Cells::new(LOAD_CELLS),
            level: Vec::new(),
            busy: Spread::default(),
            output: Spread::default(),
            input: Spread::default(),
        }
    }

    /// Widens the cells until `t` falls in one.
    fn fit(&mut self, t: u64) {
        while self.cells.too_narrow_for(t) {
            let width = self.cells.width();
            merge_tens(&mut self.level, coarse_sample, |a, b| *a += b);
            self.busy.coarsen(width);
            self.output.coarsen(width);
            self.input.coarsen(width);
            self.cells.widen();
        }
    }

    /// A request is in flight over `[sent, done)`; its input tokens
    /// spread over its prefill (sent to first content) and its output
    /// tokens over its streaming (first content to done), when it
    /// succeeded.
    fn add(&mut self, t: &Turn) {
        self.fit(t.done);
        let cells = self.cells;
        *slot(&mut self.level, cells.sample_at_or_after(t.sent)) += 1;
        *slot(&mut self.level, cells.sample_at_or_after(t.done)) -= 1;
        let busy = t.done.saturating_sub(t.sent) as f64;
        self.busy.add(&cells, t.sent, t.done, busy);
        if t.status == Status::Ok {
            let first = t.first.unwrap_or(t.done);
            self.output
                .add(&cells, first, t.done, t.output_tokens as f64);
            self.input.add(&cells, t.sent, first, t.input_tokens as f64);
        }
    }

    fn finish(self, width: u64, count: usize) -> Series {
        let cell = self.cells.width();
        let per_bin = (width / cell).max(1) as usize;
        let bin_of = |j: usize| (j / per_bin).min(count - 1);
        let per_bin_sum = |amounts: Vec<f64>| {
            let mut bins = vec![0.0; count];
            for (j, a) in amounts.into_iter().enumerate() {
                bins[bin_of(j)] += a;
            }
            bins
        };
        let busy = per_bin_sum(self.busy.finish(cell));
        let mut inflight_max = vec![0u32; count];
        let mut level = 0i64;
        for (k, change) in self.level.into_iter().enumerate() {
            level += change;
            let max = &mut inflight_max[bin_of(k)];
            *max = (*max).max(u32::try_from(level.max(0)).unwrap_or(u32::MAX));
        }
        let mean: Vec<f64> = busy.iter().map(|a| a / width as f64).collect();
        for (max, mean) in inflight_max.iter_mut().zip(&mean) {
            // The peak is at least the mean (a short spike between two
            // sample instants is not seen, its time in flight is).
            let floor = (mean - 1e-9).ceil().max(0.0);
            *max = (*max).max(floor.min(f64::from(u32::MAX)) as u32);
        }
        let per_s = 1e9 / width as f64;
        let rate = |amounts: Vec<f64>| -> Vec<f64> {
            per_bin_sum(amounts)
                .into_iter()
                .map(|x| (x * per_s).round())
                .collect()
        };
        Series {
            bin_s: round_secs(width),
            t_s: (0..count as u64)
                .map(|i| round_secs(i.saturating_mul(width)))
                .collect(),
            inflight_max,
            inflight_mean: mean.iter().map(|m| (m * 100.0).round() / 100.0).collect(),
            output_tok_s: rate(self.output.finish(cell)),
            input_tok_s: rate(self.input.finish(cell)),
            measured: None,
        }
    }
}

/// What a run measured, per measured cell.
#[derive(Debug)]
struct Measuring {
    cells: Cells,
    /// TTFT of successful requests, at their `sent`.
    ttft: CellValues,
    /// Cached and input tokens of successful requests whose usage
    /// reported cached tokens, at their `sent`.
    cached: Vec<(u64, u64)>,
    /// Failed requests by error class, at their `done`.
    errors: BTreeMap<String, Vec<u32>>,
}

impl Measuring {
    fn new() -> Measuring {
        Measuring {
            cells: Cells::new(MEASURED_CELLS),
            ttft: CellValues::default(),
            cached: Vec::new(),
            errors: BTreeMap::new(),
        }
    }

    fn fit(&mut self, t: u64) {
        while self.cells.too_narrow_for(t) {
            self.ttft.coarsen();
            merge_tens(&mut self.cached, coarse_cell, |a, b| {
                a.0 = a.0.saturating_add(b.0);
                a.1 = a.1.saturating_add(b.1);
            });
            for counts in self.errors.values_mut() {
                merge_tens(counts, coarse_cell, |a, b| *a = a.saturating_add(b));
            }
            self.cells.widen();
        }
    }

    fn add(&mut self, t: &Turn, class: Option<&str>) {
        self.fit(t.done);
        let cells = self.cells;
        match t.status {
            Status::Ok => {
                if let Some(ttft) = t.ttft {
                    self.ttft.add(&cells, t.sent, ttft);
                }
                if let Some(c) = t.cached_tokens {
                    let s = slot(&mut self.cached, cells.cell(t.sent));
                    s.0 = s.0.saturating_add(c);
                    s.1 = s.1.saturating_add(t.input_tokens);
                }
            }
            Status::Error => {
                let class = class.unwrap_or("unknown");
                // Looked up before inserting: no allocation per failure.
                let counts = match self.errors.get_mut(class) {
                    Some(counts) => counts,
                    None => self.errors.entry(class.to_string()).or_default(),
                };
                let n = slot(counts, cells.cell(t.done));
                *n = n.saturating_add(1);
            }
            Status::Cancelled | Status::Warmup => {}
        }
    }

    fn finish(self, width: u64, count: usize) -> Measured {
        let per_bin = (width / self.cells.width()).max(1) as usize;
        let bin_of = |j: usize| (j / per_bin).min(count - 1);
        let mut ttft = self
            .ttft
            .percentiles(&self.cells, per_bin, count, &[0.50, 0.99])
            .into_iter()
            .map(|bins| bins.into_iter().map(|v| v.map(round_secs)).collect());
        let mut cached = vec![(0u64, 0u64); count];
        for (j, (c, i)) in self.cached.into_iter().enumerate() {
            let slot = &mut cached[bin_of(j)];
            slot.0 = slot.0.saturating_add(c);
            slot.1 = slot.1.saturating_add(i);
        }
        let errors = self
            .errors
            .into_iter()
            .map(|(class, counts)| {
                let mut bins = vec![0u32; count];
                for (j, n) in counts.into_iter().enumerate() {
                    bins[bin_of(j)] = bins[bin_of(j)].saturating_add(n);
                }
                (class, bins)
            })
            .collect();
        Measured {
            ttft_p50_s: ttft.next().unwrap_or_default(),
            ttft_p99_s: ttft.next().unwrap_or_default(),
            errors,
            cache_hit: cached
                .into_iter()
                .map(|(c, i)| (i > 0).then(|| (c as f64 / i as f64 * 1e4).round() / 1e4))
                .collect(),
        }
    }
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

    fn run<'a>(turns: impl Iterator<Item = &'a Turn>) -> Series {
        let mut series = SeriesBuilder::run();
        for t in turns {
            series.add(t, None);
        }
        series.finish()
    }

    /// A deterministic scatter of `n` requests over about `span_s`
    /// seconds, some failed.
    fn scatter(n: u64, span_s: u64) -> Vec<Turn> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        (0..n)
            .map(|i| {
                let sent = next(span_s * 1_000_000_000);
                let mut t = turn(0, 0);
                t.sent = sent;
                t.eligible = sent;
                t.first = Some(sent + next(50_000_000));
                t.done = t.first.unwrap() + next(2_000_000_000);
                t.ttft = Some(t.first.unwrap() - sent);
                t.request = i;
                if i % 7 == 0 {
                    t.status = Status::Error;
                }
                t
            })
            .collect()
    }

    #[test]
    fn a_long_series_keeps_its_sums_and_a_lower_bound_of_its_peaks() {
        let turns = scatter(20_000, 3_600);
        let mut series = SeriesBuilder::run();
        for t in &turns {
            series.add(t, t.status.eq(&Status::Error).then_some("timeout"));
        }
        // Bounded: the cells, not the turns, are kept.
        assert!(series.load.level.len() as u64 <= LOAD_CELLS + 1);
        let s = series.finish();
        let width = (s.bin_s * 1e9).round() as u64;
        let bins = s.t_s.len();
        // Exact figures per bin, from every turn.
        let mut events: Vec<(u64, i64)> = turns
            .iter()
            .flat_map(|t| [(t.sent, 1), (t.done, -1)])
            .collect();
        events.sort_unstable();
        // The most after any event of the bin, and the level entering it.
        let mut peak = vec![0i64; bins];
        let mut entering = vec![0i64; bins];
        let (mut level, mut bin) = (0i64, 0usize);
        for (at, change) in events {
            let i = ((at / width) as usize).min(bins - 1);
            while bin < i {
                bin += 1;
                entering[bin] = level;
            }
            level += change;
            peak[i] = peak[i].max(level);
        }
        while bin + 1 < bins {
            bin += 1;
            entering[bin] = level;
        }
        let mut area = vec![0f64; bins];
        for t in &turns {
            let mut at = t.sent;
            while at < t.done {
                let i = (at / width) as usize;
                let end = ((i as u64 + 1) * width).min(t.done);
                area[i.min(bins - 1)] += (end - at) as f64;
                at = end;
            }
        }
        for i in 0..bins {
            let mean = area[i] / width as f64;
            assert!((s.inflight_mean[i] - mean).abs() <= 0.005 + 1e-9, "bin {i}");
            let true_peak = peak[i].max(entering[i]);
            let got = i64::from(s.inflight_max[i]);
            assert!(
                got <= true_peak,
                "bin {i}: {got} above the true {true_peak}"
            );
            assert!(
                got as f64 >= mean - 1e-9,
                "bin {i}: {got} below the mean {mean}"
            );
        }
        let failed = turns.iter().filter(|t| t.status == Status::Error).count();
        let m = s.measured.as_ref().unwrap();
        assert_eq!(m.errors["timeout"].iter().sum::<u32>() as usize, failed);
        let tokens: f64 = s.output_tok_s.iter().map(|r| r * s.bin_s).sum();
        let ok = turns.len() - failed;
        // Each bin's rate is rounded to a whole token per second.
        let rounding = 0.5 * bins as f64 * s.bin_s;
        assert!((tokens - 100.0 * ok as f64).abs() <= rounding, "{tokens}");
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
        let s = run([turn(0, 100), turn(50, 200)].iter());
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
