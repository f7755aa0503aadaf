//! The scraper: a thread of its own that asks the server's `/metrics`
//! every interval during a live run and writes what it answers to
//! `metrics.jsonl` as it comes.
//!
//! Owns the thread, its one-thread runtime, the scrape loop and the
//! lines it writes. The first scrape is taken before the run's clock
//! starts (stamped 0) and the last after the run ended, so counters
//! cover the whole run. Never on the request path: once the clock runs,
//! the live run's client thread neither waits for the scraper nor hears
//! from it. A scrape that fails (no
//! answer, an HTTP error, an answer with no sample) is written as a
//! failed scrape and the next one goes on schedule; it never stops the
//! run.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arbor_engine::time::Nanos;
use reqwest::header::HeaderMap;
use tokio::sync::oneshot;
use tokio::time::MissedTickBehavior;

use crate::endpoint::without_url;
use arbor_error::Error;

use super::exposition::{self, Sample};
use arbor_runs::server_metrics::line::{Line, METRICS_FILE};
use arbor_runs::server_metrics::names;

/// What to scrape, and how often.
#[derive(Debug, Clone)]
pub struct Settings {
    pub url: String,
    pub interval: Duration,
    /// Write every sample, not only the recognised ones.
    pub all: bool,
    /// Sent with every scrape (the endpoint's headers, when the URL is the
    /// endpoint's own).
    pub headers: HeaderMap,
    /// With several endpoints: the replica this URL is (its lines say
    /// so); `None` with one.
    pub replica: Option<u32>,
}

impl Settings {
    /// How long one scrape may take.
    fn timeout(&self) -> Duration {
        self.interval.max(Duration::from_secs(5))
    }
}

/// A running scraper; [`Scraper::finish`] stops it.
pub struct Scraper {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Scraper {
    /// Creates `dir/metrics.jsonl`, takes the first scrape (the baseline
    /// of the counters, stamped 0: it is answered before the clock
    /// starts) and returns once it is written: the run's clock starts
    /// after this returns, so a stamp is never earlier than its scrape on
    /// the run's clock. `client` is used on the scraper's thread only.
    pub fn start(
        settings: Settings,
        client: reqwest::Client,
        dir: &Path,
    ) -> Result<Scraper, Error> {
        Scraper::start_all(vec![settings], client, dir)
    }

    /// [`Scraper::start`] of several URLs (one a replica), scraped one
    /// after the other at each tick of the first's interval, into the one
    /// file.
    pub fn start_all(
        settings: Vec<Settings>,
        client: reqwest::Client,
        dir: &Path,
    ) -> Result<Scraper, Error> {
        let path = dir.join(METRICS_FILE);
        let file = File::create(&path)
            .map_err(|e| Error::other(format!("{}: cannot create: {e}", path.display())))?;
        let (stop, stopped) = oneshot::channel();
        let (ready, started) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("arbor-metrics".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(scrape_loop(
                    &settings,
                    &client,
                    BufWriter::new(file),
                    ready,
                    stopped,
                ))
            })
            .map_err(|e| Error::other(format!("cannot start the metrics scraper: {e}")))?;
        let mut scraper = Scraper {
            stop: Some(stop),
            thread: Some(thread),
        };
        if started.recv().is_err() {
            // The thread ended before its first scrape was written.
            let why = scraper
                .stop_and_join()
                .err()
                .map_or_else(|| "it stopped".to_string(), |e| e.to_string());
            return Err(Error::other(format!(
                "{}: the metrics scraper could not start: {why}",
                path.display()
            )));
        }
        Ok(scraper)
    }

    /// Stops scraping (a scrape under way is dropped), takes one last
    /// scrape (the counters' end) and waits for the file to be written.
    /// An error is one of writing `metrics.jsonl`.
    pub fn finish(mut self) -> io::Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the metrics scraper's thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Scraper {
    /// A run that ends in an error stops its scraper too.
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

async fn scrape_loop(
    all: &[Settings],
    client: &reqwest::Client,
    mut out: BufWriter<File>,
    ready: std::sync::mpsc::Sender<()>,
    mut stopped: oneshot::Receiver<()>,
) -> io::Result<()> {
    let Some(first) = all.first() else {
        let _ = ready.send(());
        return Ok(());
    };
    let mut text = Vec::new();
    let mut write =
        |settings: &Settings, time_ns: Nanos, answer: Result<String, String>| -> io::Result<()> {
            text.clear();
            for mut line in lines(time_ns, answer, settings.all) {
                line.replica = settings.replica;
                serde_json::to_writer(&mut text, &line).map_err(io::Error::other)?;
                text.push(b'\n');
            }
            out.write_all(&text)?;
            out.flush()
        };
    for settings in all {
        write(
            settings,
            0,
            fetch(client, settings, settings.timeout()).await,
        )?;
    }
    let epoch = Instant::now();
    let _ = ready.send(());
    let mut ticks = tokio::time::interval_at((epoch + first.interval).into(), first.interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    'run: loop {
        tokio::select! {
            _ = &mut stopped => break,
            _ = ticks.tick() => {}
        }
        for settings in all {
            let answer = tokio::select! {
                _ = &mut stopped => break 'run,
                answer = fetch(client, settings, settings.timeout()) => answer,
            };
            write(settings, epoch.elapsed().as_nanos() as Nanos, answer)?;
        }
    }
    // The run is over: the counters' end.
    for settings in all {
        let answer = fetch(client, settings, settings.timeout()).await;
        write(settings, epoch.elapsed().as_nanos() as Nanos, answer)?;
    }
    Ok(())
}

/// The body of one scrape of `settings.url` within `timeout`, or why
/// there is none (in words that name no URL).
pub async fn fetch(
    client: &reqwest::Client,
    settings: &Settings,
    timeout: Duration,
) -> Result<String, String> {
    let response = client
        .get(&settings.url)
        .headers(settings.headers.clone())
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| without_url(&e.without_url()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("HTTP {}", status.as_u16()));
    }
    response
        .text()
        .await
        .map_err(|e| without_url(&e.without_url()))
}

/// The lines of one scrape: its samples (the recognised ones, or all),
/// then its outcome.
pub fn lines(time_ns: Nanos, answer: Result<String, String>, all: bool) -> Vec<Line> {
    let samples = match answer {
        Ok(text) => exposition::parse(&text),
        Err(e) => return vec![Line::scrape(time_ns, Some(e))],
    };
    if samples.is_empty() {
        let why = "the answer held no Prometheus sample".to_string();
        return vec![Line::scrape(time_ns, Some(why))];
    }
    let mut lines: Vec<Line> = samples
        .into_iter()
        .filter_map(
            |Sample {
                 name,
                 labels,
                 value,
             }| {
                let metric = names::recognise(&name).map(|m| m.name().to_string());
                (all || metric.is_some()).then_some(Line {
                    time_ns,
                    name,
                    labels,
                    value,
                    metric,
                    replica: None,
                })
            },
        )
        .collect();
    lines.push(Line::scrape(time_ns, None));
    lines
}
