//! The live dashboard of `arbor run` (`--ui dashboard`): a block of
//! figures on stderr, redrawn in place [`REDRAWS_PER_S`] times a second
//! from a snapshot its own thread takes.
//!
//! Owns the thread, the terminal and the snapshot: each redraw reads the
//! driver's [`Progress`] atomics and the records the driver has written
//! since the last one ([`RecordsWatch`], within its budget), and draws
//! what [`view`] makes of them at the terminal's current size. The driver
//! does nothing for it (no lock, no allocation, no message on the request
//! path). Notices that come while it shows (a stop signal's) are printed
//! above the block. It hides the cursor while it draws and shows it again
//! when it stops, after a Ctrl+C too (arbor's stop is graceful: the run
//! ends through [`Dashboard::finish`]) and if it is dropped unfinished.
//! [`view`] lays a frame out; [`rates`] keeps the samples its rates come
//! from.

pub mod rates;
pub mod view;

use std::io::{self, Write};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arbor::backends::live::Progress;
use arbor::engine::time::Nanos;
use arbor::observer::Clock;
use arbor::runs::watch::RecordsWatch;
use crossterm::{cursor, queue, terminal as term};

use crate::progress::{frame, Counts, Span};
use crate::terminal::{self, Size};
use rates::{Sample, Samples};
use view::View;

/// Redraws a second.
pub const REDRAWS_PER_S: u64 = 4;

/// The size drawn for when neither the environment nor the terminal says.
const FALLBACK: Size = Size {
    columns: 80,
    rows: 24,
};

/// The lines on screen, and the terminal they are on.
struct Screen {
    /// Lines of the block drawn last (the cursor is on the line below).
    drawn: u16,
    last: Vec<String>,
    cursor_hidden: bool,
}

impl Screen {
    /// Draws `lines` over the last block.
    fn draw(&mut self, lines: Vec<String>) {
        let mut out = Vec::with_capacity(4096);
        self.up(&mut out);
        if !self.cursor_hidden {
            let _ = queue!(out, cursor::Hide);
            self.cursor_hidden = true;
        }
        for line in &lines {
            out.extend_from_slice(line.as_bytes());
            let _ = queue!(out, term::Clear(term::ClearType::UntilNewLine));
            out.push(b'\n');
        }
        let _ = queue!(out, term::Clear(term::ClearType::FromCursorDown));
        write(&out);
        self.drawn = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        self.last = lines;
    }

    /// `line` above the block, which is drawn again below it.
    fn notice(&mut self, line: &str) {
        let mut out = Vec::new();
        self.up(&mut out);
        let _ = queue!(out, term::Clear(term::ClearType::FromCursorDown));
        // A notice may start with a blank line of its own; the block
        // already stands apart.
        out.extend_from_slice(line.trim_start_matches('\n').as_bytes());
        out.push(b'\n');
        write(&out);
        self.drawn = 0;
        let last = std::mem::take(&mut self.last);
        self.draw(last);
    }

    /// The cursor shown again, below the last block (left on screen).
    fn restore(&mut self) {
        if self.cursor_hidden {
            let mut out = Vec::new();
            let _ = queue!(out, cursor::Show);
            write(&out);
            self.cursor_hidden = false;
        }
    }

    /// Moves to the first line of the last block.
    fn up(&self, out: &mut Vec<u8>) {
        if self.drawn > 0 {
            let _ = queue!(out, cursor::MoveToPreviousLine(self.drawn));
        }
    }
}

/// Writes `bytes` to stderr at once (a closed stderr is not an error).
fn write(bytes: &[u8]) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(bytes).and_then(|()| err.flush());
}

/// What a redraw reads, and what it keeps between redraws.
struct Live {
    progress: Arc<Progress>,
    span: Span,
    planned: Nanos,
    planned_peak: u64,
    trees: u64,
    started: Instant,
    watch: RecordsWatch,
    samples: Samples,
}

impl Live {
    /// The lines of a frame now, for `size`.
    fn lines(&mut self, last: bool, size: Size) -> Vec<String> {
        let elapsed = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let counts = Counts::read(&self.progress);
        self.watch.read();
        let watched = self.watch.watched();
        self.samples.push(Sample {
            at: elapsed,
            done: counts.done,
            records: watched.records,
            output_tokens: watched.so_far.output_tokens,
        });
        let rates = if last {
            self.samples.whole(watched.sampled)
        } else {
            self.samples.recent(watched.sampled)
        };
        let f = frame(self.span, self.planned, elapsed, counts, last);
        let view = View {
            frame: &f,
            span: self.span,
            planned_peak: self.planned_peak,
            trees: self.trees,
            rates,
            watched: &watched,
        };
        // Short of the last column and the last row: a full line would
        // wrap on some terminals, a full screen scroll.
        let width = usize::from(size.columns.saturating_sub(1)).max(20);
        let height = usize::from(size.rows.saturating_sub(1)).max(5);
        let mut lines = view::lines(&view, width, height.saturating_sub(usize::from(last)));
        if last {
            // The final frame stays; what follows starts apart from it.
            lines.push(String::new());
        }
        lines
    }
}

/// A running dashboard; [`Dashboard::finish`] draws its final frame.
pub struct Dashboard {
    screen: Arc<Mutex<Screen>>,
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

fn locked(screen: &Mutex<Screen>) -> MutexGuard<'_, Screen> {
    screen.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Dashboard {
    /// Starts drawing `clock`'s run on a thread of its own.
    pub fn start(clock: &Clock) -> Dashboard {
        let mut live = Live {
            progress: Arc::clone(&clock.progress),
            span: Span::of(clock.duration, clock.dispatched),
            planned: clock.planned,
            planned_peak: u64::from(clock.run.planned.peak_inflight),
            trees: clock.run.trees,
            started: Instant::now(),
            watch: clock.watch(),
            samples: Samples::new(),
        };
        let screen = Arc::new(Mutex::new(Screen {
            drawn: 0,
            last: Vec::new(),
            cursor_hidden: false,
        }));
        let drawing = Arc::clone(&screen);
        let (stop, stopped) = mpsc::channel::<()>();
        let every = Duration::from_millis(1000 / REDRAWS_PER_S);
        let thread = std::thread::Builder::new()
            .name("arbor-dashboard".into())
            .spawn(move || {
                let size = || terminal::stderr_size().unwrap_or(FALLBACK);
                locked(&drawing).draw(live.lines(false, size()));
                // A late redraw is skipped, not caught up.
                let mut next = Instant::now() + every;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    let last =
                        !matches!(stopped.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
                    let lines = live.lines(last, size());
                    let mut screen = locked(&drawing);
                    screen.draw(lines);
                    if last {
                        screen.restore();
                        return;
                    }
                    drop(screen);
                    next += every;
                    let now = Instant::now();
                    while next <= now {
                        next += every;
                    }
                }
            })
            .ok();
        Dashboard {
            screen,
            stop,
            thread,
        }
    }

    /// Prints `line` above the block.
    pub fn notice(&self, line: &str) {
        locked(&self.screen).notice(line);
    }

    /// Stops the redraws; the final frame (the final counts, `finished`)
    /// stays on screen and the cursor is shown again.
    pub fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        locked(&self.screen).restore();
    }
}

impl Drop for Dashboard {
    /// Unfinished (an error unwound past it): the terminal is restored
    /// all the same.
    fn drop(&mut self) {
        self.stop_thread();
    }
}
