//! Where the console draws: the size of stderr's terminal and the width of
//! stdout's, and which progress display (`--ui`) a run gets when none is
//! asked for.
//!
//! Owns the sizes' sources (the environment's `COLUMNS` and `LINES` first,
//! as Python's and most tools' do, then the terminal's own size) and the
//! thresholds of the default; draws nothing.

use std::io::IsTerminal;

use clap::ValueEnum;

/// The progress display of a run (`--ui`): `Dashboard`, a block of live
/// figures redrawn in place on stderr; `Simple`, one line (a bar on a
/// terminal, else a status line every 10 s); `None`, nothing
/// (`--no-progress`). (Described here, not on each variant: described
/// variants would turn `arbor run --help` into clap's long form.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Ui {
    Dashboard,
    Simple,
    None,
}

/// The default dashboard needs a terminal at least this wide...
pub const DASHBOARD_MIN_COLUMNS: u16 = 100;
/// ...and this tall.
pub const DASHBOARD_MIN_ROWS: u16 = 20;

/// Columns and rows of a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub columns: u16,
    pub rows: u16,
}

impl Ui {
    /// `--ui` when given, `none` under `--no-progress`; else the
    /// dashboard on a terminal of at least [`DASHBOARD_MIN_COLUMNS`] x
    /// [`DASHBOARD_MIN_ROWS`], the simple line on a smaller one and when
    /// stderr is not a terminal (there it prints a status line every 10 s,
    /// as arbor always has).
    pub fn resolve(asked: Option<Ui>, no_progress: bool) -> Ui {
        match (asked, no_progress) {
            (Some(ui), _) => ui,
            (None, true) => Ui::None,
            (None, false) => Ui::default_for(std::io::stderr().is_terminal(), stderr_size()),
        }
    }

    /// The default on stderr: a terminal or not, of `size` when known.
    pub fn default_for(terminal: bool, size: Option<Size>) -> Ui {
        match size {
            Some(s)
                if terminal
                    && s.columns >= DASHBOARD_MIN_COLUMNS
                    && s.rows >= DASHBOARD_MIN_ROWS =>
            {
                Ui::Dashboard
            }
            _ => Ui::Simple,
        }
    }
}

/// A positive number from the environment variable `name`.
fn from_env(name: &str) -> Option<u16> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u16>().ok())
        .filter(|&n| n > 0)
}

/// The size of stderr's terminal: `COLUMNS` and `LINES` when set, else
/// the terminal's when stderr is one; `None` when neither says.
pub fn stderr_size() -> Option<Size> {
    let measured = || {
        std::io::stderr()
            .is_terminal()
            .then(crossterm::terminal::size)
            .and_then(Result::ok)
            .filter(|&(columns, rows)| columns > 0 && rows > 0)
    };
    match (from_env("COLUMNS"), from_env("LINES")) {
        (Some(columns), Some(rows)) => Some(Size { columns, rows }),
        (columns, rows) => {
            let (c, r) = measured().unzip();
            Some(Size {
                columns: columns.or(c)?,
                rows: rows.or(r).unwrap_or(24),
            })
        }
    }
}

/// The width stdout's lines may take: `COLUMNS` when set, else the
/// terminal's when stdout is one; `None` (no limit) for a file or a pipe.
pub fn stdout_width() -> Option<usize> {
    if let Some(columns) = from_env("COLUMNS") {
        return Some(usize::from(columns));
    }
    std::io::stdout()
        .is_terminal()
        .then(crossterm::terminal::size)
        .and_then(Result::ok)
        .map(|(columns, _)| usize::from(columns))
        .filter(|&c| c > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dashboard_is_the_default_on_a_big_enough_terminal_only() {
        let size = |columns, rows| Some(Size { columns, rows });
        assert_eq!(Ui::default_for(true, size(200, 50)), Ui::Dashboard);
        assert_eq!(Ui::default_for(true, size(100, 20)), Ui::Dashboard);
        assert_eq!(Ui::default_for(true, size(99, 50)), Ui::Simple);
        assert_eq!(Ui::default_for(true, size(200, 19)), Ui::Simple);
        assert_eq!(Ui::default_for(true, None), Ui::Simple);
        // Not a terminal (a log, CI): status lines, whatever COLUMNS says.
        assert_eq!(Ui::default_for(false, size(200, 50)), Ui::Simple);
    }

    #[test]
    fn asked_wins_and_no_progress_is_none() {
        assert_eq!(Ui::resolve(Some(Ui::Dashboard), false), Ui::Dashboard);
        assert_eq!(Ui::resolve(Some(Ui::Simple), false), Ui::Simple);
        assert_eq!(Ui::resolve(None, true), Ui::None);
    }
}
