//! The capacity page: one self-contained HTML page of a capacity
//! directory (`arbor capacity -o OUT`), answer first: how much load holds
//! within the SLOs, then the goodput curve and each SLO metric against
//! the load with its limit, the knee and its bracket, the prediction
//! beside a live search when there is one, and every probe's verdict.
//! `arbor capacity` writes it into its directory at the end
//! ([`write_for_search`]); `arbor report OUT` redraws it ([`report`],
//! reached from [`crate::page::report`] when its one directory holds a
//! `capacity.json`: [`is_capacity_dir`]).
//!
//! Modules: [`file`] (`capacity.json` read back), [`words`] (the answer
//! and each verdict in words), [`data`] (the page's JSON). The page is
//! drawn by its own script, `report/assets/capacity.js`, with the
//! report's vendored uPlot and styles and `capacity.css` (the page's
//! `html`, its sibling). Reads only the files a search wrote (and
//! each probe's `summary.json` for its throughput); never a probe's
//! records, so the page stays small whatever the probes held.

pub mod data;
pub mod file;
pub mod words;

use std::path::{Path, PathBuf};

use arbor_error::Error;

use super::html;
use super::REPORT_FILE;

pub use file::CAPACITY_FILE;

const CAPACITY_JS: &str = include_str!("../../../assets/capacity.js");
const CAPACITY_CSS: &str = include_str!("../../../assets/capacity.css");

/// Whether `dir` is a capacity search's directory (it holds
/// `capacity.json`).
pub fn is_capacity_dir(dir: &Path) -> bool {
    dir.join(CAPACITY_FILE).is_file()
}

/// `arbor report CAPACITY_DIR [-o FILE]`: writes the page (default
/// `CAPACITY_DIR/report.html`); the line that says where it is and what
/// it answers.
pub fn report(dir: &Path, out: Option<&Path>) -> Result<String, Error> {
    let out = out.map_or_else(|| dir.join(REPORT_FILE), Path::to_path_buf);
    let (bytes, headline) = write(dir, &out)?;
    Ok(format!(
        "report in {} (capacity: {headline}; {:.1} MB)",
        out.display(),
        bytes as f64 / 1e6
    ))
}

/// Writes the page of the search just finished in `dir` to
/// `dir/report.html`; the line that says where it is (the console's last
/// line). Any failure is one of writing the search's output (exit 1).
pub fn write_for_search(dir: &Path) -> Result<String, Error> {
    let out: PathBuf = dir.join(REPORT_FILE);
    write(dir, &out).map_err(|f| Error::other(f.message))?;
    Ok(format!("report in {}", out.display()))
}

/// Writes the page of `dir` to `out`; its size in bytes and its headline.
pub fn write(dir: &Path, out: &Path) -> Result<(u64, String), Error> {
    let page = data::read(dir)?;
    let json = serde_json::to_string(&page)
        .map_err(|e| Error::other(format!("cannot encode the capacity page's data: {e}")))?;
    let html = html::page_drawn_by(
        &format!("arbor capacity: {}", dir.display()),
        &json,
        CAPACITY_JS,
        CAPACITY_CSS,
    );
    std::fs::write(out, &html)
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", out.display())))?;
    Ok((html.len() as u64, page.headline))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_cannot_close_its_element() {
        for asset in [CAPACITY_JS, CAPACITY_CSS] {
            assert!(!asset.to_ascii_lowercase().contains("</script"));
            assert!(!asset.to_ascii_lowercase().contains("</style"));
        }
    }
}
