//! `arbor run --threads N`: the plan over N OS threads of one process.
//!
//! Owns how many threads a run takes ([`count`]: the flag, or the
//! available cores minus the in-process emulator's; one, or refused, with
//! a policy no thread can keep alone), each thread's stripe of the plan
//! ([`schedulers`]: thread j of N plays `--shard j/N`, or stripe
//! `I + M·j` of `M·N` under `--shard I/M`; `--max-inflight` is split so
//! the process never has more in flight), the threads themselves
//! ([`Crew`]: each a current-thread runtime running the live loop over
//! its own scheduler with its own connection pool, all from one epoch,
//! requests and plays numbered in the process), the sink that takes every
//! thread's records into the one `records.jsonl` and collector
//! ([`ThreadSink`]), and the end of the run the threads add up to
//! ([`end`]).
//!
//! Must not: change a run of one thread (`run_against` drives it as
//! before, without any of this), nor lock or hop a channel per event: a
//! thread's sink serializes its records itself, takes the shared
//! collector's lock once per record and the file's once per burst.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arbor_backends::live::numbering::Numbering;
use arbor_backends::live::{self, Among, LiveConfig, LiveError, Progress, RunOutcome};
use arbor_engine::dag::CompiledWorkload;
use arbor_engine::policy::{Policy, Shard};
use arbor_engine::scheduler::Scheduler;
use arbor_engine::Workload;
use arbor_runs::record::RecordSink;
use arbor_runs::record::RequestRecord;
use tokio::sync::{oneshot, watch};

use crate::inputs;
use crate::{runtime, Observer};
use arbor_error::Error;

use arbor_runs::journal::RunEnd;
use arbor_runs::output::{self, RecordsFile};

/// The threads a run takes: `--threads`, or by default the available
/// cores, less one for the built-in emulator when it runs in this
/// process, at least 1. A policy that needs every request of the run at
/// once (the global idle-gap cap, the start window's one profiling start)
/// takes one thread, and is refused with `--threads` above 1. No more
/// threads than `--max-inflight` (each thread keeps a share of it), nor
/// than the stripes of work there are (`items`: lanes, or plays).
pub fn count(
    flag: Option<u32>,
    policy: &Policy,
    emulator_in_process: bool,
    items: u64,
    observer: &dyn Observer,
) -> Result<u32, Error> {
    let wanted = match flag {
        Some(n) => n,
        None => available().saturating_sub(u32::from(emulator_in_process)),
    }
    .max(1);
    if wanted == 1 {
        return Ok(1);
    }
    if let Some(words) = unsplittable(policy) {
        if flag.is_some() {
            return Err(Error::input(format!(
                "{words} with --threads {wanted}: {}; give --threads 1, or leave --threads out \
                 (then the run takes one thread)",
                why(policy)
            )));
        }
        observer.notice(&format!(
            "arbor run: one client thread: {words} needs every request of the run at once"
        ));
        return Ok(1);
    }
    let mut n = u64::from(wanted).min(items.max(1));
    if let Some(cap) = policy.max_inflight {
        n = n.min(u64::from(cap));
    }
    let n = n as u32;
    if flag.is_some() && n < wanted {
        observer.notice(&format!(
            "arbor run: {n} client thread{} rather than {wanted}: no more threads than {}",
            if n == 1 { "" } else { "s" },
            if policy
                .max_inflight
                .is_some_and(|c| u64::from(c) == u64::from(n))
            {
                "--max-inflight (each thread keeps a share of it)"
            } else {
                "stripes of work (lanes, or plays)"
            }
        ));
    }
    Ok(n)
}

/// The cores this process may use.
fn available() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(1024) as u32)
}

/// The flag of a policy no thread can keep alone, if one is on.
fn unsplittable(policy: &Policy) -> Option<&'static str> {
    if policy.idle_gap_cap.is_some() {
        Some("--idle-gap-cap")
    } else if policy.start_window.is_some() {
        Some("--start-window")
    } else {
        None
    }
}

fn why(policy: &Policy) -> &'static str {
    if policy.idle_gap_cap.is_some() {
        "the global idle-gap cap needs every thread idle at once, which no thread knows \
         (--tree-idle-cap is per tree and splits exactly)"
    } else {
        "all lanes start profiling at one instant, which threads with schedulers of their own \
         cannot share"
    }
}

/// The stripes of work of `scheduler` (not yet run): its lanes with a
/// share under `--sessions`, its plays otherwise.
pub fn items(scheduler: &Scheduler) -> u64 {
    if scheduler.policy().sessions.is_some() {
        scheduler
            .lanes()
            .iter()
            .filter(|l| !l.share.is_empty())
            .count() as u64
    } else {
        scheduler.plays().len() as u64
    }
}

/// Thread `j` of `n`'s policy: stripe `j/n` of the plan (of this shard's
/// stripe under `--shard I/M`: `I + M·j` of `M·n`, whose union over `j` is
/// the shard), and its share of `--max-inflight`.
pub fn policy_of(policy: &Policy, j: u32, n: u32) -> Result<Policy, Error> {
    let shard = match policy.shard {
        None => Shard { index: j, count: n },
        Some(s) => {
            let too_many = || {
                Error::input(format!(
                    "--shard {s} with --threads {n}: {} stripes are more than can be counted",
                    u64::from(s.count) * u64::from(n)
                ))
            };
            Shard {
                index: s
                    .count
                    .checked_mul(j)
                    .and_then(|x| x.checked_add(s.index))
                    .ok_or_else(too_many)?,
                count: s.count.checked_mul(n).ok_or_else(too_many)?,
            }
        }
    };
    let max_inflight = policy
        .max_inflight
        .map(|cap| cap / n + u32::from(j < cap % n));
    Ok(Policy {
        shard: Some(shard),
        max_inflight,
        ..policy.clone()
    })
}

/// One scheduler a thread, over its stripe (none for one thread).
pub fn schedulers(
    compiled: &CompiledWorkload,
    policy: &Policy,
    n: u32,
) -> Result<Vec<Scheduler>, Error> {
    if n <= 1 {
        return Ok(Vec::new());
    }
    (0..n)
        .map(|j| inputs::scheduler(compiled.clone(), policy_of(policy, j, n)?))
        .collect()
}

/// The run's end from every thread's: counts add up, the elapsed time is
/// the latest, the observed peaks add up (at most that many were in
/// flight at once), lanes are each played by one thread.
pub fn end(threads: Vec<Finished>, stopped_by: Option<&'static str>) -> Result<RunEnd, LiveError> {
    let mut total: Option<RunEnd> = None;
    for t in threads {
        let outcome = match t.result {
            Some(Ok(outcome)) => outcome,
            Some(Err(e)) => return Err(e),
            None => RunOutcome {
                cancelled: true,
                elapsed: 0,
                observed_peak_inflight: 0,
                prebuilt_bodies: 0,
                history: None,
            },
        };
        let one = RunEnd::new(&outcome.driven(), &t.scheduler, stopped_by);
        total = Some(match total {
            None => one,
            Some(sum) => sum.with(one),
        });
    }
    Ok(total.unwrap_or_default())
}

/// What every thread needs once the clock starts.
#[derive(Clone)]
pub struct Go {
    pub epoch: Instant,
    pub records: Arc<Mutex<RecordsFile>>,
    pub progress: Arc<Progress>,
    pub numbering: Arc<Numbering>,
}

/// What a thread left: its scheduler, and how its loop ended (`None`: it
/// never started, or a second signal abandoned it).
pub struct Finished {
    pub scheduler: Scheduler,
    pub result: Option<Result<RunOutcome, LiveError>>,
}

/// What the threads are told after the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Halt {
    Run,
    /// A stop signal: no new requests, the grace for those in flight.
    Stop,
    /// A second signal: drop the requests in flight.
    Abandon,
}

/// The run's threads, from their pools' warming to their end.
pub struct Crew {
    handles: Vec<JoinHandle<()>>,
    ready: Vec<oneshot::Receiver<Result<usize, String>>>,
    go: Vec<oneshot::Sender<Go>>,
    done: Vec<oneshot::Receiver<Finished>>,
    halt: watch::Sender<Halt>,
}

impl Crew {
    /// Starts one thread a scheduler, each warming its own pool (`configs`
    /// give each its own target); they wait for [`Crew::run`].
    pub fn spawn(
        schedulers: Vec<Scheduler>,
        workload: &Arc<Workload>,
        configs: Vec<LiveConfig>,
    ) -> Result<Crew, Error> {
        let (halt, halted) = watch::channel(Halt::Run);
        let mut crew = Crew {
            handles: Vec::new(),
            ready: Vec::new(),
            go: Vec::new(),
            done: Vec::new(),
            halt,
        };
        for (j, (scheduler, config)) in schedulers.into_iter().zip(configs).enumerate() {
            let (ready_tx, ready_rx) = oneshot::channel();
            let (go_tx, go_rx) = oneshot::channel();
            let (done_tx, done_rx) = oneshot::channel();
            let thread = Thread {
                scheduler,
                workload: Arc::clone(workload),
                config,
                ready: ready_tx,
                go: go_rx,
                done: done_tx,
                halt: halted.clone(),
            };
            let handle = std::thread::Builder::new()
                .name(format!("arbor-client-{j}"))
                .spawn(move || thread.run())
                .map_err(|e| Error::other(format!("cannot start client thread {j}: {e}")))?;
            crew.handles.push(handle);
            crew.ready.push(ready_rx);
            crew.go.push(go_tx);
            crew.done.push(done_rx);
        }
        Ok(crew)
    }

    /// Waits until every thread has warmed its pool.
    pub async fn ready(&mut self) -> Result<usize, Error> {
        let mut proven = 0;
        for (j, ready) in self.ready.drain(..).enumerate() {
            match ready.await {
                Ok(Ok(warmed)) => proven += warmed,
                Ok(Err(e)) => return Err(Error::other(format!("client thread {j}: {e}"))),
                Err(_) => return Err(Error::other(format!("client thread {j} ended early"))),
            }
        }
        Ok(proven)
    }

    /// Starts every thread's loop at `go.epoch` and waits for them all;
    /// `stop` resolving stops them all (no new requests, the grace).
    pub async fn run(
        &mut self,
        go: Go,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Vec<Finished>, Error> {
        for tx in self.go.drain(..) {
            let _ = tx.send(go.clone());
        }
        drop(go);
        let receivers: Vec<_> = self.done.drain(..).collect();
        let all = async move {
            let mut finished = Vec::with_capacity(receivers.len());
            for (j, rx) in receivers.into_iter().enumerate() {
                finished.push(
                    rx.await
                        .map_err(|_| Error::other(format!("client thread {j} failed")))?,
                );
            }
            Ok(finished)
        };
        tokio::pin!(all);
        tokio::select! {
            biased;
            finished = &mut all => finished,
            () = stop => {
                let _ = self.halt.send(Halt::Stop);
                all.await
            }
        }
    }

    /// Ends the threads (a thread still running drops its requests in
    /// flight) and waits for them: their records are then all written.
    pub fn join(self) {
        let _ = self.halt.send(Halt::Abandon);
        for handle in self.handles {
            let _ = handle.join();
        }
    }
}

/// One thread's part, moved into it.
struct Thread {
    scheduler: Scheduler,
    workload: Arc<Workload>,
    config: LiveConfig,
    ready: oneshot::Sender<Result<usize, String>>,
    go: oneshot::Receiver<Go>,
    done: oneshot::Sender<Finished>,
    halt: watch::Receiver<Halt>,
}

impl Thread {
    fn run(self) {
        let client = match runtime::client() {
            Ok(client) => client,
            Err(e) => {
                let _ = self.ready.send(Err(e.message));
                return;
            }
        };
        client.block_on(self.drive());
        // The requests' tasks (and connections) go with the runtime.
        client.shutdown_timeout(Duration::from_millis(200));
    }

    async fn drive(self) {
        let Thread {
            mut scheduler,
            workload,
            config,
            ready,
            go,
            done,
            halt,
        } = self;
        let proven = live::warm_pool(&config).await;
        let _ = ready.send(Ok(proven));
        let Ok(go) = go.await else {
            let _ = done.send(Finished {
                scheduler,
                result: None,
            });
            return;
        };
        let mut sink = ThreadSink::new(Arc::clone(&go.records));
        let mut stopped = halt.clone();
        let stop = async move {
            let _ = stopped.wait_for(|h| *h != Halt::Run).await;
        };
        let among = Among {
            epoch: go.epoch,
            numbering: Some(Arc::clone(&go.numbering)),
        };
        let result = {
            let driven = live::run_among(
                among,
                &mut scheduler,
                workload,
                &config,
                &mut sink,
                &go.progress,
                stop,
            );
            let mut abandoned = halt;
            tokio::select! {
                biased;
                result = driven => Some(result),
                _ = abandoned.wait_for(|h| *h == Halt::Abandon) => None,
            }
        };
        let result = match (result, sink.flush()) {
            (Some(Ok(_)), Err(e)) => Some(Err(LiveError::Sink(e))),
            (result, _) => result,
        };
        let _ = done.send(Finished { scheduler, result });
    }
}

/// A thread's record sink: its records serialized on the thread, counted
/// in the run's collector as they come, written to the run's
/// `records.jsonl` a burst at a time.
pub struct ThreadSink {
    shared: Arc<Mutex<RecordsFile>>,
    pending: Vec<u8>,
}

impl ThreadSink {
    pub fn new(shared: Arc<Mutex<RecordsFile>>) -> ThreadSink {
        ThreadSink {
            shared,
            pending: Vec::with_capacity(64 * 1024),
        }
    }

    fn file(&self) -> MutexGuard<'_, RecordsFile> {
        // A thread that panicked holding the lock left whole lines only.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RecordSink for ThreadSink {
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()> {
        output::serialize_line(&mut self.pending, record)?;
        self.file().count(record);
        if self.pending.len() >= output::FLUSH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = self.file().write_lines(&self.pending);
        self.pending.clear();
        written
    }
}

/// The shared file back, once every thread is done with it.
pub fn records_back(shared: Arc<Mutex<RecordsFile>>) -> Result<RecordsFile, Error> {
    Arc::try_unwrap(shared)
        .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
        .map_err(|_| Error::other("a client thread still holds records.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(policy: &Policy, n: u32) -> Vec<(Shard, Option<u32>)> {
        (0..n)
            .map(|j| {
                let p = policy_of(policy, j, n).unwrap();
                (p.shard.unwrap(), p.max_inflight)
            })
            .collect()
    }

    #[test]
    fn threads_take_stripes_whose_union_is_the_plan_or_the_shard() {
        let whole = Policy::default();
        let got = shards(&whole, 3);
        for (j, (s, _)) in got.iter().enumerate() {
            assert_eq!(
                *s,
                Shard {
                    index: j as u32,
                    count: 3
                }
            );
        }
        let shard = Policy {
            shard: Some(Shard { index: 1, count: 4 }),
            ..Policy::default()
        };
        let got = shards(&shard, 3);
        // Items k of thread j: k ≡ 1 + 4j (mod 12); together k ≡ 1 (mod 4).
        let mut kept: Vec<u64> = (0..48)
            .filter(|&k| got.iter().any(|(s, _)| s.keeps(k)))
            .collect();
        kept.dedup();
        assert_eq!(kept, (0..48).filter(|k| k % 4 == 1).collect::<Vec<_>>());
        for k in 0..48u64 {
            assert!(got.iter().filter(|(s, _)| s.keeps(k)).count() <= 1);
        }
    }

    #[test]
    fn max_inflight_is_split_and_adds_up() {
        let capped = Policy {
            max_inflight: Some(10),
            ..Policy::default()
        };
        let caps: Vec<u32> = shards(&capped, 3).iter().map(|(_, c)| c.unwrap()).collect();
        assert_eq!(caps, [4, 3, 3]);
        assert_eq!(shards(&Policy::default(), 2)[0].1, None);
    }

    #[test]
    fn the_count_defaults_refuses_and_caps() {
        let plain = Policy::default();
        assert_eq!(count(Some(4), &plain, true, 100, &crate::Quiet).unwrap(), 4);
        assert_eq!(count(Some(4), &plain, true, 2, &crate::Quiet).unwrap(), 2);
        assert_eq!(
            count(Some(1), &plain, false, 100, &crate::Quiet).unwrap(),
            1
        );
        let capped = Policy {
            max_inflight: Some(3),
            ..Policy::default()
        };
        assert_eq!(
            count(Some(8), &capped, false, 100, &crate::Quiet).unwrap(),
            3
        );
        assert!(count(None, &plain, false, 100, &crate::Quiet).unwrap() >= 1);
        let idle = Policy {
            idle_gap_cap: Some(1),
            ..Policy::default()
        };
        let refused = count(Some(2), &idle, false, 100, &crate::Quiet)
            .err()
            .unwrap();
        assert!(refused.is_input());
        assert!(refused.message.contains("--idle-gap-cap with --threads 2"));
        assert_eq!(count(None, &idle, false, 100, &crate::Quiet).unwrap(), 1);
        assert_eq!(count(Some(1), &idle, false, 100, &crate::Quiet).unwrap(), 1);
    }
}
