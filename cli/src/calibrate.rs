//! `arbor calibrate RUN_DIR... -o PROFILE.toml`: the flags to the
//! library's options, the fit (`arbor::sim::calibrate`, docs/capacity.md,
//! "Calibration"), the profile written, then what each stage found, the
//! notes and the fit-error table on stdout.

use std::io::{self, Write};
use std::time::SystemTime;

use arbor::sim::calibrate::{self, Calibration, Compared, FitError, GivenLimits, Note, Options};
use arbor::Error;

use crate::args::CalibrateArgs;
use crate::stdout;

/// Runs `arbor calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<(), Error> {
    let options = Options {
        run_dirs: args.run_dirs.clone(),
        limits: GivenLimits {
            max_num_seqs: args.max_num_seqs,
            max_num_batched_tokens: args.max_num_batched_tokens,
            block_size: args.block_size,
            num_gpu_blocks: args.num_gpu_blocks,
        },
        correction: !args.no_correction,
        fitted_at: SystemTime::now(),
    };
    let calibration = calibrate::fit(&options)?;
    calibration.write_profile(&args.out)?;
    stdout::print(|out| {
        write_report(out, &calibration)?;
        writeln!(out, "wrote {}", args.out.display())
    })
}

fn write_report(out: &mut dyn Write, c: &Calibration) -> io::Result<()> {
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
        None => writeln!(out, "stage B: skipped (--no-correction)")?,
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
