//! `arbor data fetch`: downloads a dataset's files into a directory,
//! verified. A pinned entry's files are verified against its hashes; an
//! entry without hashes is fetched only from its own `base_url` (https, or
//! http to a loopback host), every file from byte 0 whatever is in place,
//! and the hashes found are returned for the caller to record as its
//! trust-on-first-use pin (`arbor_formats::data::pin::trust_first_use`),
//! which later fetches verify against. Owns the transfer: a `NAME.part` file per file,
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

/// Whether fetching `dataset` is its first use: it has no hashes, so what
/// the fetch finds is trusted and recorded.
pub fn is_first_use(dataset: &Dataset) -> bool {
    dataset.file_hashes().is_none()
}

/// A URL a first use may trust: https, or http to a loopback host (a
/// local mirror, the tests).
fn trusted_source(url: &str) -> bool {
    if url.starts_with("https://") {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split('/').next().unwrap_or_default();
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// Fetches every file of `dataset` into `dir` and returns them, each with
/// its size and SHA-256: exit 2 for an entry that cannot be fetched (no
/// files listed, no trusted `base_url` for a first use), 1 for a transfer
/// or verification failure (naming the file).
pub fn fetch(
    dataset: &Dataset,
    dir: &Path,
    observer: &dyn FetchObserver,
) -> Result<Vec<DatasetFile>, Error> {
    let first_use = is_first_use(dataset);
    if first_use && dataset.files.is_empty() {
        return Err(Error::input(format!(
            "dataset {}: unpinned ({}) and no file names listed: nothing to fetch. A local copy can be \
             pinned under a name of its own (`arbor data pin DIR --name my-copy`); it is not the \
             registry's corpus, so a recipe run of it is stamped `unpinned_dataset`",
            dataset.name,
            dataset.unpinned.as_deref().unwrap_or("no SHA-256 per file"),
        )));
    }
    if first_use && !trusted_source(&dataset.base_url) {
        return Err(Error::input(format!(
            "dataset {}: no SHA-256 per file, and its base URL `{}` is not an https source: \
             a first fetch is trusted only from the entry's own https source",
            dataset.name, dataset.base_url
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
    let mut fetched = Vec::with_capacity(dataset.files.len());
    for file in &dataset.files {
        let url = format!("{}{}", dataset.base_url, file.name);
        let (outcome, sha256, size) =
            runtime.block_on(fetch_file(&client, &url, file, dir, observer))?;
        observer.fetched(&file.name, &outcome);
        fetched.push(DatasetFile {
            name: file.name.clone(),
            size: Some(size),
            sha256: Some(sha256),
        });
    }
    Ok(fetched)
}

fn io_failure(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::other(format!("{}: cannot {what}: {e}", path.display()))
}

/// `dir/NAME.part`.
fn part_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.part"))
}

/// One file in place: how, its SHA-256 and its size.
async fn fetch_file(
    client: &reqwest::Client,
    url: &str,
    file: &DatasetFile,
    dir: &Path,
    observer: &dyn FetchObserver,
) -> Result<(Fetched, String, u64), Error> {
    let dest = dir.join(&file.name);
    let part = part_path(dir, &file.name);
    let expected = file.sha256.as_deref();
    match expected {
        Some(expected) if dest.is_file() => {
            let got = hash_file(&dest).map_err(|e| io_failure(&dest, "read", e))?;
            if got == expected {
                let size = std::fs::metadata(&dest).map_or(0, |m| m.len());
                observer.progress(file.size.unwrap_or(size));
                return Ok((Fetched::Verified, got, size));
            }
            observer.mismatch(&file.name, &got, expected);
            std::fs::remove_file(&dest).map_err(|e| io_failure(&dest, "remove", e))?;
        }
        Some(_) => {}
        None => {
            // A first use trusts only what its source sends now.
            for stale in [&dest, &part] {
                if stale.exists() {
                    std::fs::remove_file(stale).map_err(|e| io_failure(stale, "remove", e))?;
                }
            }
        }
    }
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
    if let Some(expected) = expected.filter(|e| *e != got) {
        let _ = std::fs::remove_file(&part);
        return Err(Error::other(format!(
            "{}: SHA-256 mismatch: expected {expected}, got {got}; the download is discarded",
            file.name
        )));
    }
    let size = std::fs::metadata(&part).map_or(0, |m| m.len());
    std::fs::rename(&part, &dest).map_err(|e| io_failure(&dest, "move into place", e))?;
    Ok((
        Fetched::Downloaded {
            resumed_from,
            restarted_from,
        },
        got,
        size,
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_use_trusts_only_https_or_a_loopback_mirror() {
        assert!(trusted_source(
            "https://huggingface.co/datasets/x/resolve/main/"
        ));
        assert!(trusted_source("http://127.0.0.1:8080/d/"));
        assert!(trusted_source("http://localhost/d/"));
        assert!(!trusted_source("http://example.org/d/"));
        assert!(!trusted_source("http://127.0.0.1.example.org/d/"));
        assert!(!trusted_source(""));
        assert!(!trusted_source("file:///tmp/d/"));
    }
}
