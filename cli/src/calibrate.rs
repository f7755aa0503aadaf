//! `arbor calibrate RUN_DIR... -o PROFILE.toml`: the flags to the
//! library's options, the fit (`arbor::sim::calibrate`, docs/capacity.md,
//! "Calibration"), the profile written, then what each stage found, the
//! notes, each coefficient's interval and the fit-error table on stdout.
//! With `--probe`, the designed experiment first
//! (`arbor::calibrate_probe`): its phases, then the same report.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::SystemTime;

use arbor::calibrate_probe::{self, ProbeOptions, Probed};
use arbor::options::{RequestOptions, RunOptions};
use arbor::sim::calibrate::{
    self, Calibration, Compared, FitError, Fitting, GivenLimits, Note, Options, Spread,
};
use arbor::Error;

use crate::args::CalibrateArgs;
use crate::console::Console;
use crate::stdout;

/// Runs `arbor calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<(), Error> {
    let limits = GivenLimits {
        max_num_seqs: args.max_num_seqs,
        max_num_batched_tokens: args.max_num_batched_tokens,
        block_size: args.block_size,
        num_gpu_blocks: args.num_gpu_blocks,
    };
    if args.probe {
        return probe(args, limits);
    }
    let options = Options {
        run_dirs: args.run_dirs.clone(),
        limits,
        correction: !args.no_correction && !args.probe_fit,
        fitted_at: SystemTime::now(),
    };
    let (fitting, no_correction) = match args.probe_fit {
        true => (Fitting::Probe, "--probe-fit"),
        false => (Fitting::Ordinary, "--no-correction"),
    };
    let calibration = calibrate::fit_with(&options, args.bootstrap, fitting)?;
    calibration.write_profile(&args.out)?;
    stdout::print(|out| {
        write_report(out, &calibration, no_correction)?;
        writeln!(out, "wrote {}", args.out.display())
    })
}

/// `--probe`: the experiment, then the fit of its runs.
fn probe(args: &CalibrateArgs, limits: GivenLimits) -> Result<(), Error> {
    let mut request = RequestOptions {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        api: args.api,
        ignore_eos: args.ignore_eos,
        extra_body: args.extra_body.clone(),
        headers: args.headers.clone(),
        ..RequestOptions::default()
    };
    request.preflight.ready_timeout = std::time::Duration::from_nanos(args.ready_timeout);
    let mut run = RunOptions {
        request,
        ..RunOptions::default()
    };
    run.input.tokenizer = args.tokenizer.clone();
    let out = args.probe_out.clone().unwrap_or_else(|| {
        let mut dir = args.out.clone().into_os_string();
        dir.push(".probe");
        PathBuf::from(dir)
    });
    let options = ProbeOptions {
        run,
        limits,
        max_context: args.max_context,
        decode_tokens: args.probe_output_tokens,
        repeat: args.probe_repeat,
        out,
        // The designed runs identify every coefficient in stage A; stage
        // B's replay of them (a few requests a run) fits noise.
        correction: false,
        resamples: args.bootstrap,
        fitted_at: SystemTime::now(),
    };
    // Refused before anything is sent.
    calibrate_probe::probe_limits(&options)?;
    let probed = calibrate_probe::probe(&options, &Console::default())?;
    probed.calibration.write_profile(&args.out)?;
    stdout::print(|out| {
        write_phases(out, &probed)?;
        write_report(
            out,
            &probed.calibration,
            "--probe: stage A identifies every coefficient",
        )?;
        writeln!(out, "wrote {}", args.out.display())
    })
}

/// The probe's phases: each run's name, requests, wall time, and what it
/// identifies.
fn write_phases(out: &mut dyn Write, probed: &Probed) -> io::Result<()> {
    writeln!(
        out,
        "arbor calibrate --probe: {} phases in {:.1} s (fits included)",
        probed.phases.len(),
        probed.wall_s
    )?;
    for p in &probed.phases {
        writeln!(
            out,
            "  {:16} {:4} requests {:7.1} s  {}",
            p.name, p.requests, p.wall_s, p.identifies
        )?;
    }
    Ok(())
}

/// What each stage found, the notes, the uncertainty and the fit error;
/// `no_correction` says why stage B did not run, when it did not.
fn write_report(out: &mut dyn Write, c: &Calibration, no_correction: &str) -> io::Result<()> {
    let requests: usize = c.runs.iter().map(|r| r.requests).sum();
    let skipped: u64 = c.runs.iter().map(|r| r.skipped).sum();
    writeln!(
        out,
        "arbor calibrate: {} run(s), {requests} finished requests ({skipped} left out: failed, \
         cancelled or unstamped)",
        c.runs.len()
    )?;
    let e = &c.profile.engine;
    writeln!(
        out,
        "engine: max_num_seqs {}, max_num_batched_tokens {}, block_size {}, num_gpu_blocks {}",
        e.max_num_seqs, e.max_num_batched_tokens, e.block_size, e.num_gpu_blocks
    )?;
    let fit = &c.stage_a;
    writeln!(
        out,
        "stage A: {} decode rows, {} lone-prefill rows; knee {} tokens; rms {:.3} ms a step",
        fit.decode_rows,
        fit.prefill_rows,
        fit.step.knee_tokens,
        fit.rms_ns / 1e6
    )?;
    if fit.slower_repeats > 0 {
        writeln!(
            out,
            "  {} lone rows left out as the slower of a repeated request (a late stamp only adds)",
            fit.slower_repeats
        )?;
    }
    if fit.trimmed_rows > 0 {
        writeln!(
            out,
            "  {} rows left out as outliers (more than {} robust standard deviations off \
             the fit: a late stamp) and the fit made again",
            fit.trimmed_rows,
            calibrate::TRIM_SCALES
        )?;
    }
    for note in &c.notes {
        match note {
            Note::Preempted { run, times } => writeln!(
                out,
                "  {run}: the server preempted {times} times; a client cannot see the \
                 recomputation that costs, so this run's rows understate the work (calibrate \
                 from runs whose KV pool was not exhausted)"
            )?,
            Note::OverheadNotIdentified => writeln!(
                out,
                "  no request ran alone: the per-request overhead is not identified (0); add a \
                 low-load run (e.g. --sessions 1)"
            )?,
            Note::Windowed {
                run,
                read,
                left_out,
                cut_s,
            } => writeln!(
                out,
                "  {run}: fitted on its first {cut_s:.3} s, the {read} finished requests sent \
                 before then; {left_out} later ones not read (a calibration reads at most {} \
                 a run, its first stretch of time, whole)",
                calibrate::MAX_REQUESTS
            )?,
            Note::NotIdentified(s) => writeln!(
                out,
                "  {}: not identified by these runs: {} within [{}, {}] (90 %)",
                s.name,
                number(s.value),
                number(s.low),
                number(s.high)
            )?,
        }
    }
    match &c.correction {
        Some(correction) => {
            let shown: Vec<String> = correction
                .factors
                .by_group()
                .map(|(g, f)| format!("{g} ×{f:.3}"))
                .collect();
            writeln!(
                out,
                "stage B: {} (loss {:.4} -> {:.4})",
                shown.join(", "),
                correction.loss_before,
                correction.loss_after
            )?;
        }
        None => writeln!(out, "stage B: skipped ({no_correction})")?,
    }
    let s = &c.profile.step;
    writeln!(
        out,
        "step ns = {:.1} + {:.2}·seqs + {:.3}·tokens + {:.3}·max(0, tokens − {}) + {:.5}·decode \
         context + {:.7}·prefill attention; overhead {} ns a request",
        s.constant_ns,
        s.per_seq_ns,
        s.per_token_ns,
        s.per_token_above_knee_ns,
        s.knee_tokens,
        s.per_decode_context_token_ns,
        s.per_prefill_attention_ns,
        c.profile.overhead.arrival_ns + c.profile.overhead.departure_ns
    )?;
    if !c.spreads.is_empty() {
        write_spreads(out, c)?;
    }
    for block in &c.fit_error {
        let (model, server) = (block.model_cached_tokens, block.server_cached_tokens);
        if server > 0 || model > 0 {
            writeln!(
                out,
                "prefix cache ({}): the model found {model} cached prompt tokens where the \
                 server reported {server}",
                source(block)
            )?;
        }
    }
    writeln!(out, "fit error (replay of each run through the profile):")?;
    let table: Vec<(&str, &[Compared])> = c
        .fit_error
        .iter()
        .map(|block| (source(block), block.compared.as_slice()))
        .collect();
    write_table(out, &table)
}

/// Each coefficient: its value, its 90 % interval over the bootstrap
/// draws, the interval's half-width against the value, and whether these
/// runs identify it.
fn write_spreads(out: &mut dyn Write, c: &Calibration) -> io::Result<()> {
    let draws = c.profile.uncertainty.as_ref().map_or(0, |u| u.draws.len());
    writeln!(
        out,
        "uncertainty ({draws} bootstrap resamples of the requests; 90 % interval):"
    )?;
    writeln!(
        out,
        "{:28} {:>14} {:>14} {:>14} {:>9}",
        "coefficient", "value", "low", "high", "± share"
    )?;
    for s in &c.spreads {
        writeln!(out, "{}", spread_line(s))?;
    }
    Ok(())
}

/// One coefficient's line of the uncertainty table.
fn spread_line(s: &Spread) -> String {
    let share = match s.relative_half_width() {
        Some(r) => format!("{:.1}%", r * 100.0),
        None => "-".into(),
    };
    let verdict = if s.identified() {
        ""
    } else {
        "  not identified"
    };
    format!(
        "{:28} {:>14} {:>14} {:>14} {:>9}{verdict}",
        s.name,
        number(s.value),
        number(s.low),
        number(s.high),
        share
    )
}

/// A coefficient, to four significant figures or whole.
fn number(v: f64) -> String {
    if v == 0.0 || v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        format!("{:.4}", v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// A fit-error block's name: its run's, or `all`.
fn source(block: &FitError) -> &str {
    block.run.as_deref().unwrap_or("all")
}

fn ms(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

/// The fit-error table: one block per source (a run's name, or `all`), a
/// line per metric and quantile.
fn write_table(out: &mut dyn Write, blocks: &[(&str, &[Compared])]) -> io::Result<()> {
    let width = blocks
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(3)
        .max(3);
    writeln!(
        out,
        "{:width$}  {:6} {:>14} {:>14} {:>8}",
        "run", "metric", "measured ms", "predicted ms", "error"
    )?;
    for (name, compared) in blocks {
        for c in *compared {
            writeln!(
                out,
                "{:width$}  {:6} {:>14} {:>14} {:>7.1}%",
                name,
                format!("{} {}", c.metric.name(), c.quantile),
                ms(c.measured),
                ms(c.predicted),
                c.error_pct()
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor::sim::calibrate::Metric;

    #[test]
    fn the_table_lines_up_each_metric_and_quantile() {
        let compared = [
            Compared {
                metric: Metric::Ttft,
                quantile: "p50",
                measured: 500,
                predicted: 1000,
            },
            Compared {
                metric: Metric::Itl,
                quantile: "p90",
                measured: 2_500_000,
                predicted: 2_450_000,
            },
        ];
        let mut text = Vec::new();
        write_table(&mut text, &[("all", &compared)]).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(
            text,
            "run  metric    measured ms   predicted ms    error\n\
             all  TTFT p50           0.00           0.00   100.0%\n\
             all  ITL p90           2.50           2.45    -2.0%\n"
        );
    }
}
