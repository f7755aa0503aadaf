//! `arbor summarize RUN_DIR`: `summary.json` rebuilt from what a run left
//! in its directory (`arbor::runs::summarize`), what changed said on
//! stdout, and the report page rebuilt beside it.

use arbor::runs::output::SUMMARY_FILE;
use arbor::runs::summarize::{rebuild, write_keeping_old, Kept};
use arbor::Error;

use crate::args::SummarizeArgs;
use crate::stdout;

/// `arbor summarize`.
pub fn run(args: &SummarizeArgs) -> Result<(), Error> {
    let dir = &args.run_dir;
    let rebuilt = rebuild(dir)?;
    let bytes = rebuilt.summary.to_bytes()?;
    let kept = write_keeping_old(dir, &bytes)?;
    stdout::print(|out| {
        let state = if rebuilt.summary.complete {
            "complete"
        } else {
            "incomplete: the run did not end cleanly"
        };
        writeln!(
            out,
            "arbor summarize: {} records of {} ({state})",
            rebuilt.records,
            dir.display()
        )?;
        for note in &rebuilt.summary.notes {
            writeln!(out, "  note: {note}")?;
        }
        match kept {
            Kept::Unchanged => writeln!(
                out,
                "{} unchanged (the rebuilt summary is identical)",
                dir.join(SUMMARY_FILE).display()
            ),
            Kept::New => writeln!(out, "wrote {}", dir.join(SUMMARY_FILE).display()),
            Kept::Old(old) => writeln!(
                out,
                "wrote {}; the one it replaced differed and is kept as {}",
                dir.join(SUMMARY_FILE).display(),
                old.display()
            ),
        }
    })?;
    // The report is a view of the summary and the records: rebuilt too.
    crate::page::write_for_run(dir)
}
