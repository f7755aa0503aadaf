//! `arbor data` (docs/data.md): the subcommands over the registry
//! (`arbor::formats::data`), the download (`arbor::backends::fetch`) and the
//! pin (`arbor::formats::data::pin`), and what the console shows of them:
//! the list, a dataset's details, the fetch's progress bar and notes.

use std::io::IsTerminal;
use std::time::Duration;

use arbor::backends::fetch::{self, FetchObserver, FetchOptions, Fetched};
use arbor::formats::data::registry::{self, Dataset, Registry};
use arbor::formats::data::{self as datasets, pin};
use arbor::formats::manifest::Pinning;
use arbor::Error;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::args::{DataArgs, DataCommand};

pub fn run(args: &DataArgs) -> Result<(), Error> {
    let registry = datasets::registry()?;
    match &args.command {
        DataCommand::List => crate::stdout::print(|out| out.write_all(list(&registry).as_bytes())),
        DataCommand::Info { name } => {
            let text = info(registry.get(name).map_err(Error::input)?);
            crate::stdout::print(|out| out.write_all(text.as_bytes()))
        }
        DataCommand::Fetch {
            name,
            dir,
            timeout,
            max_bytes,
        } => {
            let dataset = registry.get(name).map_err(Error::input)?;
            let dir = match dir {
                Some(d) => d.clone(),
                None => datasets::default_dir(name)?,
            };
            let bar = progress_bar(dataset.total_size());
            let options = FetchOptions {
                timeout: Duration::from_nanos(*timeout),
                max_bytes: *max_bytes,
                ..FetchOptions::default()
            };
            let files = fetch::fetch(dataset, &dir, &options, &Bar(&bar))?;
            bar.finish_and_clear();
            if fetch::is_first_use(dataset) {
                let pinned = pin::trust_first_use(dataset, files)?;
                eprintln!(
                    "arbor data: {name}: no reviewed hashes: pinned on first use from {} \
                     (trust_on_first_use), manifest {}, in {}; later fetches verify against it",
                    dataset.base_url,
                    pinned.manifest,
                    pinned.registry.display()
                );
            }
            eprintln!(
                "arbor data: {name}: {} files in {} (use it as data:{name})",
                dataset.files.len(),
                dir.display()
            );
            Ok(())
        }
        DataCommand::Pin { dir, name } => {
            let pinned = pin::pin(dir, name)?;
            eprintln!(
                "arbor data: pinned {name}: {} files, manifest {}, in {}",
                pinned.files,
                pinned.manifest,
                pinned.registry.display()
            );
            Ok(())
        }
    }
}

fn list(registry: &Registry) -> String {
    let mut out = String::new();
    for d in &registry.datasets {
        let pinned = match d.pinning() {
            Some(Pinning::Registry) => "pinned",
            Some(Pinning::TrustOnFirstUse) => "pinned on first use",
            Some(Pinning::LocalPin) => "local pin",
            None => "unpinned",
        };
        let fetched = if d.local_dir().is_some() {
            "fetched"
        } else {
            "not fetched"
        };
        out.push_str(&format!(
            "{:<32} {:>4} files {:>12} bytes  {pinned:<19}  {fetched}\n",
            d.name,
            d.files.len(),
            d.total_size()
        ));
    }
    out
}

fn info(d: &Dataset) -> String {
    let mut out = format!(
        "name:        {}\ndescription: {}\nsource:      {}\nrevision:    {}\nbase URL:    {}\n",
        d.name, d.description, d.source, d.revision, d.base_url
    );
    if let Some(license) = &d.license {
        out.push_str(&format!("license:     {license}\n"));
    }
    match (d.manifest(), d.pinning()) {
        (Some(m), Some(how)) => {
            out.push_str(&format!("manifest:    {m}\npinned by:   {}\n", how.tag()))
        }
        _ => out.push_str(&format!(
            "manifest:    none: {}\n",
            d.unpinned
                .as_deref()
                .unwrap_or("unpinned until its first `arbor data fetch`")
        )),
    }
    if let Some(dir) = &d.pinned_from {
        out.push_str(&format!("pinned from: {}\n", dir.display()));
    }
    if let Some(dir) = registry::cache_dir(&d.name) {
        out.push_str(&format!("fetch to:    {}\n", dir.display()));
    }
    for f in &d.files {
        out.push_str(&format!(
            "  {}  {:>12}  {}\n",
            f.sha256.as_deref().unwrap_or("(no sha256)"),
            f.size.map_or("?".to_string(), |s| s.to_string()),
            f.name
        ));
    }
    out
}

fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {msg}")
    {
        bar.set_style(style);
    }
    bar
}

/// A fetch on the console: its bytes on the bar, each file's note above it.
struct Bar<'a>(&'a ProgressBar);

impl FetchObserver for Bar<'_> {
    fn progress(&self, bytes: u64) {
        self.0.inc(bytes);
    }

    fn mismatch(&self, file: &str, got: &str, expected: &str) {
        self.0.suspend(|| {
            eprintln!(
                "arbor data: {file}: SHA-256 {got} in place, expected {expected}: fetching it again"
            )
        });
    }

    fn fetched(&self, file: &str, how: &Fetched) {
        let note = match how {
            Fetched::Verified => "verified, already in place".to_string(),
            Fetched::Downloaded {
                restarted_from: Some(had),
                ..
            } => format!(
                "the server ignored the range: downloaded again from byte 0 ({had} bytes of .part \
                 dropped), verified"
            ),
            Fetched::Downloaded {
                resumed_from: 0, ..
            } => "downloaded, verified".to_string(),
            Fetched::Downloaded { resumed_from, .. } => {
                format!("resumed at byte {resumed_from}, verified")
            }
        };
        self.0.suspend(|| eprintln!("arbor data: {file}: {note}"));
    }
}
