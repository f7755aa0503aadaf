//! What `arbor run` shows on stderr while the clock runs.
//!
//! Owns the simple display (`--ui simple`): a bar when stderr is a
//! terminal, one status line every [`STATUS_EVERY`] when it is not, each
//! label in the longest form that fits the width ([`Frame::label_within`]:
//! words, then whole figures left out). Both are fed by a ticker thread of its own that reads
//! the live driver's [`Progress`] atomics on its own timer (never the
//! driver's thread); the driver never touches
//! the display, so a request event costs a relaxed atomic add and nothing
//! more. What a frame says (position, length, label) is computed by pure
//! functions ([`Counts`], [`frame`]) so it can be tested without a
//! terminal. Must not touch the request path or the run's records.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arbor::backends::live::Progress;
use arbor::engine::time::{Nanos, NANOS_PER_MS, NANOS_PER_SEC};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{fit, terminal};

/// How often the bar is redrawn.
pub const TICK: Duration = Duration::from_millis(250);

/// How often a status line is printed when stderr is not a terminal.
pub const STATUS_EVERY: Duration = Duration::from_secs(10);

/// What starts a status line.
const STATUS: &str = "arbor run: ";

/// For tests only: the status interval in milliseconds, instead of
/// [`STATUS_EVERY`], so a short run can print several lines.
pub const STATUS_INTERVAL_ENV: &str = "ARBOR_STATUS_INTERVAL_MS";

/// What the bar measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Requests done out of the plan's `total` (a run that ends with its
    /// trees).
    Requests { total: u64 },
    /// Time elapsed out of `duration` (`--duration`, `--loop`): how many
    /// requests a run sends is not known ahead.
    Time { duration: Nanos },
}

impl Span {
    /// Time-based when the run has a `--duration`, else count-based.
    pub fn of(duration: Option<Nanos>, total: u64) -> Span {
        match duration {
            Some(duration) => Span::Time { duration },
            None => Span::Requests { total },
        }
    }
}

/// The driver's counters, read so that they agree with each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub sent: u64,
    pub done: u64,
    pub errors: u64,
}

impl Counts {
    /// Reads `done` before `sent` (a request is counted sent before it is
    /// counted done, so `sent` read later is at least `done`), and clamps
    /// besides: the counters are separate relaxed atomics.
    pub fn read(progress: &Progress) -> Counts {
        let errors = progress.errors.load(Ordering::Acquire);
        let done = progress.done.load(Ordering::Acquire);
        let sent = progress.sent.load(Ordering::Acquire);
        Counts::consistent(sent, done, errors)
    }

    /// Never done above sent, nor errors above done.
    pub fn consistent(sent: u64, done: u64, errors: u64) -> Counts {
        let done = done.min(sent);
        Counts {
            sent,
            done,
            errors: errors.min(done),
        }
    }

    /// Sent and not yet done.
    pub fn in_flight(&self) -> u64 {
        self.sent - self.done
    }
}

/// What a frame says instead of an ETA, or the ETA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eta {
    /// The time left.
    Left(Nanos),
    /// Past a `--duration`: the run waits for what is in flight (its
    /// grace period).
    Draining,
    /// The final frame.
    Finished,
}

/// One frame of the bar: `position` out of `length`, and what its label
/// says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub position: u64,
    pub length: u64,
    pub elapsed: Nanos,
    pub planned: Nanos,
    pub eta: Eta,
    pub counts: Counts,
}

/// The frame at `elapsed` into a run of `planned` (the plan's makespan on
/// the virtual clock). `last` is the final frame, drawn when the run has
/// ended: a count-based bar then stands at what was done, a time-based one
/// at the elapsed time, and the label says `finished` instead of an ETA.
pub fn frame(span: Span, planned: Nanos, elapsed: Nanos, counts: Counts, last: bool) -> Frame {
    let (position, length, remaining) = match span {
        Span::Requests { total } => {
            // Past the plan's end, the observed rate says how long is left.
            let remaining = if elapsed < planned {
                planned - elapsed
            } else if counts.done == 0 || counts.done >= total {
                0
            } else {
                let left = (total - counts.done) as u128;
                (elapsed as u128 * left / counts.done as u128).min(u64::MAX as u128) as Nanos
            };
            (counts.done.min(total), total, remaining)
        }
        Span::Time { duration } => {
            let ms = |ns: Nanos| ns / NANOS_PER_MS;
            (
                ms(elapsed.min(duration)),
                ms(duration),
                duration.saturating_sub(elapsed),
            )
        }
    };
    // Past a time-based run's duration the run waits for what is in
    // flight (its grace period): say so, not "ETA 0.0 s" for up to the
    // grace's 30 s.
    let draining = matches!(span, Span::Time { duration } if elapsed >= duration);
    let eta = if last {
        Eta::Finished
    } else if draining {
        Eta::Draining
    } else {
        Eta::Left(remaining)
    };
    Frame {
        position,
        length,
        elapsed,
        planned,
        eta,
        counts,
    }
}

impl Frame {
    /// What stands for the ETA: `ETA 45.0 s`, `finished`, or past a
    /// duration `duration reached, waiting for 3 in flight` (`short`:
    /// `waiting for 3 in flight`).
    pub fn eta_words(&self, short: bool) -> String {
        match self.eta {
            Eta::Left(remaining) => format!("ETA {}", clock(remaining)),
            Eta::Finished => "finished".to_string(),
            Eta::Draining if short => format!("waiting for {} in flight", self.counts.in_flight()),
            Eta::Draining => format!(
                "duration reached, waiting for {} in flight",
                self.counts.in_flight()
            ),
        }
    }

    /// The label in full: `15.0 s elapsed of 1:00 planned, ETA 45.0 s; 30
    /// sent, 25 done, 5 in flight, 1 errors`.
    #[cfg(test)]
    pub fn label(&self) -> String {
        self.label_forms().swap_remove(0)
    }

    /// The longest form of the label that fits `max` columns: words and
    /// then whole figures are left out, never a number cut.
    pub fn label_within(&self, max: usize) -> String {
        fit::first_fitting(&self.label_forms(), max)
    }

    /// The label's forms, longest first.
    fn label_forms(&self) -> Vec<String> {
        let (elapsed, planned) = (clock(self.elapsed), clock(self.planned));
        let (eta, eta_short) = (self.eta_words(false), self.eta_words(true));
        let c = &self.counts;
        let (sent, done, flying, errors) = (c.sent, c.done, c.in_flight(), c.errors);
        vec![
            format!(
                "{elapsed} elapsed of {planned} planned, {eta}; {sent} sent, {done} done, \
                 {flying} in flight, {errors} errors"
            ),
            format!(
                "{elapsed} of {planned}, {eta_short}; {sent} sent, {done} done, {flying} in \
                 flight, {errors} errors"
            ),
            format!("{elapsed} of {planned}, {eta_short}; {done} done, {flying} in flight, {errors} errors"),
            format!("{elapsed}, {eta_short}; {done} done, {flying} in flight"),
            format!("{elapsed}; {done} done, {flying} in flight"),
            format!("{done} done"),
        ]
    }
}

/// `7.2 s` under a minute, then `12:34`, `1:02:03`.
pub fn clock(ns: Nanos) -> String {
    if ns < 60 * NANOS_PER_SEC {
        let tenths = ns / (NANOS_PER_SEC / 10);
        return format!("{}.{} s", tenths / 10, tenths % 10);
    }
    let s = ns / NANOS_PER_SEC;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The status interval: [`STATUS_EVERY`], or the test hook's.
fn status_every() -> Duration {
    std::env::var(STATUS_INTERVAL_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(STATUS_EVERY, Duration::from_millis)
}

/// Where frames go.
enum Display {
    /// A bar of `cells` on a terminal.
    Bar {
        bar: ProgressBar,
        cells: usize,
    },
    Lines,
}

/// Cells of the bar on a terminal narrower than
/// [`terminal::DASHBOARD_MIN_COLUMNS`], and on a wider one.
const NARROW_BAR: usize = 10;
const WIDE_BAR: usize = 20;

/// The progress of one run, and what it needs to draw a frame.
struct Shown {
    progress: Arc<Progress>,
    span: Span,
    planned: Nanos,
    started: Instant,
    display: Display,
}

impl Shown {
    fn draw(&self, last: bool) {
        let elapsed = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let f = frame(
            self.span,
            self.planned,
            elapsed,
            Counts::read(&self.progress),
            last,
        );
        match &self.display {
            Display::Bar { bar, cells } => {
                // `[` bar `] ` label, short of the last column.
                let columns = terminal::stderr_size().map_or(80, |s| usize::from(s.columns));
                let room = columns.saturating_sub(cells + 4);
                bar.set_length(f.length);
                bar.set_position(f.position);
                bar.set_message(f.label_within(room));
            }
            Display::Lines => {
                let room = terminal::stderr_size().map_or(usize::MAX, |s| {
                    usize::from(s.columns).saturating_sub(STATUS.len())
                });
                eprintln!("{STATUS}{}", f.label_within(room));
            }
        }
    }
}

/// A running ticker; [`Ticker::finish`] stops it and draws the final frame.
pub struct Ticker {
    shown: Arc<Shown>,
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts the ticker on a thread of its own: a bar when stderr is a
    /// terminal, else a status line every [`STATUS_EVERY`].
    pub fn start(progress: Arc<Progress>, span: Span, planned: Nanos) -> Ticker {
        let (display, every) = if std::io::stderr().is_terminal() {
            let wide = terminal::stderr_size()
                .is_some_and(|s| s.columns >= terminal::DASHBOARD_MIN_COLUMNS);
            let cells = if wide { WIDE_BAR } else { NARROW_BAR };
            let bar = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(&format!("[{{bar:{cells}}}] {{msg}}"))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            (Display::Bar { bar, cells }, TICK)
        } else {
            (Display::Lines, status_every())
        };
        let shown = Arc::new(Shown {
            progress,
            span,
            planned,
            started: Instant::now(),
            display,
        });
        let ticking = Arc::clone(&shown);
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("arbor-progress".into())
            .spawn(move || {
                // The first frame one interval in: no status line at 0 s;
                // a late frame is skipped, not caught up.
                let mut next = Instant::now() + every;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => ticking.draw(false),
                        _ => return,
                    }
                    next += every;
                    let now = Instant::now();
                    while next <= now {
                        next += every;
                    }
                }
            })
            .ok();
        Ticker {
            shown,
            stop,
            thread,
        }
    }

    /// Stops the ticker. A bar is left on its final frame (the final
    /// counts, `finished`); status lines need none, the summary follows.
    pub fn finish(mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Display::Bar { bar, .. } = &self.shown.display {
            self.shown.draw(true);
            bar.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NANOS_PER_SEC;

    /// A frame of a count-based run of 100 requests planned for 60 s.
    fn of_100(elapsed: Nanos, counts: Counts, last: bool) -> Frame {
        frame(Span::Requests { total: 100 }, 60 * S, elapsed, counts, last)
    }

    #[test]
    fn count_based_stands_at_done_out_of_the_plans_requests() {
        let f = of_100(15 * S, Counts::consistent(30, 25, 1), false);
        assert_eq!((f.position, f.length), (25, 100));
        assert_eq!(
            f.label(),
            "15.0 s elapsed of 1:00 planned, ETA 45.0 s; 30 sent, 25 done, 5 in flight, 1 errors"
        );
    }

    #[test]
    fn past_the_plan_the_eta_comes_from_the_observed_rate() {
        let f = of_100(80 * S, Counts::consistent(60, 40, 0), false);
        // 40 done in 80 s: the 60 left take 120 s more.
        assert!(f.label().contains("ETA 2:00"), "{}", f.label());
    }

    #[test]
    fn time_based_stands_at_elapsed_out_of_the_duration() {
        let span = Span::of(Some(120 * S), 7);
        assert_eq!(span, Span::Time { duration: 120 * S });
        let f = frame(span, 125 * S, 30 * S, Counts::consistent(9, 9, 0), false);
        assert_eq!((f.position, f.length), (30_000, 120_000));
        assert!(f.label().contains("ETA 1:30"), "{}", f.label());
        // Past the duration (the grace period), the bar stays full and
        // the label says what it waits for, not an ETA of 0.
        let f = frame(span, 125 * S, 123 * S, Counts::consistent(9, 6, 0), false);
        assert_eq!(f.position, f.length);
        assert!(!f.label().contains("ETA"), "{}", f.label());
        assert!(
            f.label()
                .contains("duration reached, waiting for 3 in flight"),
            "{}",
            f.label()
        );
        assert_eq!(Span::of(None, 7), Span::Requests { total: 7 });
    }

    #[test]
    fn done_is_never_above_sent() {
        let c = Counts::consistent(10, 12, 15);
        assert_eq!(c, Counts::consistent(10, 10, 10));
        assert_eq!(c.in_flight(), 0);
        let progress = Progress::default();
        progress.sent.store(3, Ordering::Relaxed);
        progress.done.store(5, Ordering::Relaxed);
        let read = Counts::read(&progress);
        assert!(read.done <= read.sent, "{read:?}");
        let f = frame(Span::Requests { total: 4 }, S, S, read, false);
        assert!(
            f.label().contains("3 sent, 3 done, 0 in flight"),
            "{}",
            f.label()
        );
        assert!(f.position <= f.length);
    }

    #[test]
    fn the_final_frame_says_finished_with_the_final_counts() {
        let all = Counts::consistent(100, 100, 2);
        let f = of_100(61 * S, all, true);
        assert_eq!((f.position, f.length), (100, 100));
        assert!(f
            .label()
            .ends_with("finished; 100 sent, 100 done, 0 in flight, 2 errors"));
        assert!(!f.label().contains("ETA"));
        // A run stopped early ends where it stopped, not on a full bar.
        let cut = Counts::consistent(40, 38, 0);
        let f = of_100(20 * S, cut, true);
        assert_eq!(f.position, 38);
    }

    #[test]
    fn a_narrow_label_leaves_words_and_figures_out_whole() {
        let f = frame(
            Span::Time { duration: 3600 * S },
            3725 * S,
            754 * S,
            Counts::consistent(123_456, 123_000, 7),
            false,
        );
        assert_eq!(
            f.label(),
            "12:34 elapsed of 1:02:05 planned, ETA 47:26; 123456 sent, 123000 done, 456 in \
             flight, 7 errors"
        );
        // The bar at 80 columns leaves 66 for the label.
        let narrow = f.label_within(66);
        assert_eq!(
            narrow,
            "12:34 of 1:02:05, ETA 47:26; 123000 done, 456 in flight, 7 errors"
        );
        for max in [10, 30, 40, 50, 66, 80] {
            let label = f.label_within(max);
            assert!(fit::width(&label) <= max || max < 12, "{max}: {label}");
            // Every number in it whole: each is one of the frame's.
            for word in label.split(|c: char| !c.is_ascii_digit()) {
                if !word.is_empty() {
                    assert!(f.label().contains(word), "{max}: {word} in {label}");
                }
            }
        }
        // Past the duration, the short form still says what it waits for.
        let f = frame(
            Span::Time { duration: 60 * S },
            60 * S,
            61 * S,
            Counts::consistent(9, 6, 0),
            false,
        );
        assert!(
            f.label_within(60).contains("waiting for 3 in flight"),
            "{}",
            f.label_within(60)
        );
    }

    #[test]
    fn clocks_read_as_minutes_and_hours() {
        assert_eq!(clock(0), "0.0 s");
        assert_eq!(clock(7 * S + 290 * NANOS_PER_MS), "7.2 s");
        assert_eq!(clock(60 * S), "1:00");
        assert_eq!(clock(754 * S), "12:34");
        assert_eq!(clock(3723 * S), "1:02:03");
    }
}
