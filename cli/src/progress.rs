//! The progress bar of `arbor run`, on stderr.
//!
//! Owns when a bar is shown (stderr is a terminal and `--no-progress` was
//! not given) and how it is fed: a ticker task reads the live driver's
//! [`Progress`] atomics every 250 ms and redraws. The driver never touches
//! the bar, so a request event costs a relaxed atomic add and nothing more.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use arbor_backends::live::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;

/// How often the bar is redrawn.
pub const TICK: Duration = Duration::from_millis(250);

/// Should a bar be drawn?
pub fn wanted(no_progress: bool) -> bool {
    !no_progress && std::io::stderr().is_terminal()
}

/// A running ticker; [`Ticker::finish`] stops it and clears the bar.
pub struct Ticker {
    bar: ProgressBar,
    task: JoinHandle<()>,
}

impl Ticker {
    /// Starts the ticker on the current tokio runtime. `total` is the
    /// number of requests the plan dispatches.
    pub fn start(progress: Arc<Progress>, total: u64) -> Ticker {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:25}] {pos}/{len} done, {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let shown = bar.clone();
        let task = tokio::spawn(async move {
            let mut interval = tokio::time::interval(TICK);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                draw(&shown, &progress);
            }
        });
        Ticker { bar, task }
    }

    pub fn finish(self) {
        self.task.abort();
        self.bar.finish_and_clear();
    }
}

fn draw(bar: &ProgressBar, progress: &Progress) {
    let done = progress.done.load(Ordering::Relaxed);
    bar.set_position(done);
    bar.set_message(format!(
        "{} sent, {} in flight, {} errors",
        progress.sent.load(Ordering::Relaxed),
        progress.inflight.load(Ordering::Relaxed),
        progress.errors.load(Ordering::Relaxed),
    ));
}
