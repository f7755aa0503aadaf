//! `arbor data fetch`: downloads a pinned dataset's files into a
//! directory, verified. Owns the transfer: a `NAME.part` file per file,
//! resumed with an HTTP `Range` request, its length checked against the
//! registry and against what the server announces, its SHA-256 checked
//! before it is renamed into place. Nothing unverified is ever moved to
//! `NAME`; a file already in place is hashed again and fetched again when
//! it differs. Reads the registry's types (`arbor_formats::data`), never
//! its files. Prints nothing: progress and each file's outcome go to a
//! [`FetchObserver`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use reqwest::header::{CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use reqwest::StatusCode;
use sha2::{Digest, Sha256};

use crate::endpoint;
use crate::live::tls::TlsOptions;
use arbor_error::Error;
use arbor_formats::data::registry::{Dataset, DatasetFile};
use arbor_formats::manifest::{hash_file, hex};

/// What happened to one file.
#[derive(Debug, PartialEq, Eq)]
pub enum Fetched {
    /// Already in place with the right hash.
    Verified,
    /// Downloaded: `resumed_from` bytes were kept from its `.part` (0:
    /// from the start). `restarted_from`: a `.part` of that many bytes the
    /// server would not continue (it ignored the range and sent the whole
    /// file, which was taken from byte 0).
    Downloaded {
        resumed_from: u64,
        restarted_from: Option<u64>,
    },
}

/// What a fetch tells its caller while it runs (a progress bar, notes).
pub trait FetchObserver {
    /// `bytes` more of the dataset are in place (verified, kept from a
    /// `.part`, or downloaded); they add up to at most
    /// [`Dataset::total_size`].
    fn progress(&self, bytes: u64);

    /// `file` was in place with SHA-256 `got`, not `expected`: it is
    /// removed and fetched again.
    fn mismatch(&self, file: &str, got: &str, expected: &str);

    /// `file` is in place, verified.
    fn fetched(&self, file: &str, how: &Fetched);
}

/// Fetches every file of `dataset` into `dir`: exit 2 for an unpinned
/// entry, 1 for a transfer or verification failure (naming the file).
pub fn fetch(dataset: &Dataset, dir: &Path, observer: &dyn FetchObserver) -> Result<(), Error> {
    if dataset.file_hashes().is_none() {
        return Err(Error::input(format!(
            "dataset {}: unpinned ({}): nothing to verify a download against; \
             fetch it yourself and run `arbor data pin DIR --name {}`",
            dataset.name,
            dataset.unpinned.as_deref().unwrap_or("no SHA-256 per file"),
            dataset.name
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", dir.display())))?;
    let tls = endpoint::tls_config(&dataset.base_url, &TlsOptions::default())?;
    let client = endpoint::reqwest_builder(tls.as_ref())
        .build()
        .map_err(|e| Error::other(format!("cannot build the HTTP client: {e}")))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the async runtime: {e}")))?;
    for file in &dataset.files {
        let url = format!("{}{}", dataset.base_url, file.name);
        let outcome = runtime.block_on(fetch_file(&client, &url, file, dir, observer))?;
        observer.fetched(&file.name, &outcome);
    }
    Ok(())
}

fn io_failure(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::other(format!("{}: cannot {what}: {e}", path.display()))
}

/// `dir/NAME.part`.
fn part_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.part"))
}

/// The hash a pinned file must have (checked by the caller).
fn expected_hash(file: &DatasetFile) -> &str {
    file.sha256.as_deref().unwrap_or_default()
}

async fn fetch_file(
    client: &reqwest::Client,
    url: &str,
    file: &DatasetFile,
    dir: &Path,
    observer: &dyn FetchObserver,
) -> Result<Fetched, Error> {
    let dest = dir.join(&file.name);
    let expected = expected_hash(file);
    if dest.is_file() {
        let got = hash_file(&dest).map_err(|e| io_failure(&dest, "read", e))?;
        if got == expected {
            observer.progress(file.size.unwrap_or(0));
            return Ok(Fetched::Verified);
        }
        observer.mismatch(&file.name, &got, expected);
        std::fs::remove_file(&dest).map_err(|e| io_failure(&dest, "remove", e))?;
    }
    let part = part_path(dir, &file.name);
    let mut have = std::fs::metadata(&part).map_or(0, |m| m.len());
    if file.size.is_some_and(|size| have > size) {
        have = 0;
    }
    let mut hasher = Sha256::new();
    if have > 0 {
        hash_prefix(&part, have, &mut hasher)?;
    }
    let mut resumed_from = have;
    let mut restarted_from = None;
    if file.size != Some(have) || have == 0 {
        let mut request = client.get(url);
        if have > 0 {
            request = request.header(RANGE, format!("bytes={have}-"));
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| Error::other(format!("{}: {url}: {e}", file.name)))?;
        let status = response.status();
        let start = match status {
            StatusCode::PARTIAL_CONTENT if have > 0 => {
                check_range(&response, have, file)?;
                have
            }
            StatusCode::OK => {
                // The whole file, whatever was asked: the `.part` is
                // overwritten from byte 0.
                hasher = Sha256::new();
                if have > 0 {
                    restarted_from = Some(have);
                }
                resumed_from = 0;
                0
            }
            other => {
                // A `.part` the server will not continue is started over next time.
                if have > 0 {
                    let _ = std::fs::remove_file(&part);
                }
                return Err(Error::other(format!("{}: {url}: HTTP {other}", file.name)));
            }
        };
        if let Some(announced) = header_u64(&response, CONTENT_LENGTH.as_str()) {
            if let Some(size) = file.size {
                if start + announced != size {
                    return Err(Error::other(format!(
                        "{}: the server announces {} bytes from byte {start} ({} in all), the registry says {size}: refusing the file",
                        file.name,
                        announced,
                        start + announced
                    )));
                }
            }
        }
        let mut out = open_part(&part, start)?;
        observer.progress(start);
        let mut written = start;
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                Error::other(format!(
                    "{}: download interrupted at byte {written} ({e}); run `arbor data fetch` again to resume",
                    file.name
                ))
            })?;
            let Some(chunk) = chunk else { break };
            written += chunk.len() as u64;
            if file.size.is_some_and(|size| written > size) {
                drop(out);
                let _ = std::fs::remove_file(&part);
                return Err(Error::other(format!(
                    "{}: the server sent more than the registry's {} bytes: refusing the file",
                    file.name,
                    file.size.unwrap_or_default()
                )));
            }
            hasher.update(&chunk);
            out.write_all(&chunk)
                .map_err(|e| io_failure(&part, "write", e))?;
            observer.progress(chunk.len() as u64);
        }
        out.sync_all().map_err(|e| io_failure(&part, "write", e))?;
        if let Some(size) = file.size.filter(|s| *s != written) {
            return Err(Error::other(format!(
                "{}: the server sent {written} bytes, the registry says {size}; run `arbor data fetch` again to resume",
                file.name
            )));
        }
    }
    let got = hex(&hasher.finalize());
    if got != expected {
        let _ = std::fs::remove_file(&part);
        return Err(Error::other(format!(
            "{}: SHA-256 mismatch: expected {expected}, got {got}; the download is discarded",
            file.name
        )));
    }
    std::fs::rename(&part, &dest).map_err(|e| io_failure(&dest, "move into place", e))?;
    Ok(Fetched::Downloaded {
        resumed_from,
        restarted_from,
    })
}

/// Feeds the first `len` bytes of `path` to `hasher`.
fn hash_prefix(path: &Path, len: u64, hasher: &mut Sha256) -> Result<(), Error> {
    use std::io::Read;
    let file = File::open(path).map_err(|e| io_failure(path, "read", e))?;
    let mut limited = file.take(len);
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = limited
            .read(&mut buffer)
            .map_err(|e| io_failure(path, "read", e))?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buffer[..n]);
    }
}

/// The `.part` file, cut to `start` bytes, for appending.
fn open_part(part: &Path, start: u64) -> Result<File, Error> {
    let out = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(part)
        .map_err(|e| io_failure(part, "create", e))?;
    out.set_len(start)
        .map_err(|e| io_failure(part, "truncate", e))?;
    let mut out = out;
    use std::io::Seek;
    out.seek(std::io::SeekFrom::Start(start))
        .map_err(|e| io_failure(part, "seek", e))?;
    Ok(out)
}

fn header_u64(response: &reqwest::Response, name: &str) -> Option<u64> {
    response
        .headers()
        .get(name)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A `206` must start where the `.part` ends (`Content-Range: bytes
/// START-END/TOTAL`) and its total must be the registry's size.
fn check_range(response: &reqwest::Response, have: u64, file: &DatasetFile) -> Result<(), Error> {
    let text = response
        .headers()
        .get(CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let parsed = text.strip_prefix("bytes ").and_then(|rest| {
        let (range, total) = rest.split_once('/')?;
        let (start, _) = range.split_once('-')?;
        Some((start.parse::<u64>().ok()?, total.parse::<u64>().ok()))
    });
    match parsed {
        Some((start, total)) if start == have => {
            if let (Some(total), Some(size)) = (total, file.size) {
                if total != size {
                    return Err(Error::other(format!(
                        "{}: the server announces {total} bytes in all, the registry says {size}: refusing the file",
                        file.name
                    )));
                }
            }
            Ok(())
        }
        _ => Err(Error::other(format!(
            "{}: asked for bytes {have}- and got Content-Range `{text}`",
            file.name
        ))),
    }
}
