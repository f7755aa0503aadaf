//! `arbor data fetch`: downloads a dataset's files into a directory,
//! verified. A pinned entry's files (each with a size and a SHA-256) are
//! verified against them; an unpinned entry is fetched only from its own
//! `base_url` (https, or http to a loopback host), every file without a
//! hash from byte 0 whatever is in place, and the sizes and hashes found
//! are returned for the caller to record as its trust-on-first-use pin
//! (`arbor_formats::data::pin::trust_first_use`), which later fetches
//! verify against. Owns the transfer: a `NAME.part` file per file,
//! resumed with an HTTP `Range` request, its length checked against the
//! registry (or, without a size, against [`FetchOptions::max_bytes`]) and
//! against what the server announces, its SHA-256 checked before it is
//! renamed into place; the bounds on waiting ([`FetchOptions::timeout`],
//! [`FetchOptions::min_rate`]); and what it touches: only regular files
//! `NAME` and `NAME.part` inside the directory, never through a link (a
//! symbolic link or a hard-linked `.part` there is refused). Nothing
//! unverified is ever moved to `NAME`; a file already in place is hashed
//! again and fetched again when it differs. Reads the registry's types
//! (`arbor_formats::data`), never its files. Prints nothing: progress and
//! each file's outcome go to a [`FetchObserver`].

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use reqwest::StatusCode;
use sha2::{Digest, Sha256};

use crate::endpoint;
use crate::live::tls::TlsOptions;
use arbor_error::Error;
use arbor_formats::data::registry::{check_file_name, Dataset, DatasetFile};
use arbor_formats::load::{show_bytes, MAX_INPUT_BYTES};
use arbor_formats::manifest::{hash_file, hex};

/// How long a fetch waits for its server, and how much it takes from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    /// The bound on each wait: a connection and the response head
    /// (together), then each next byte of the body. A stall is an error
    /// naming the URL and what stalled.
    pub timeout: Duration,
    /// The least rate a body must keep, in bytes per second, over each
    /// `timeout` of it: a server that drips (a byte now and then, never a
    /// whole `timeout` apart) stalls too. 0: no such rule.
    pub min_rate: u64,
    /// The most bytes a file the registry gives no size for may have (a
    /// file with a size takes exactly its size).
    pub max_bytes: u64,
}

/// [`FetchOptions::timeout`]'s default: 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// [`FetchOptions::min_rate`]'s default: 1 KiB/s, far below any working
/// link, far above a server dripping a byte every few seconds.
pub const DEFAULT_MIN_RATE: u64 = 1024;

/// [`FetchOptions::max_bytes`]'s default: the largest input arbor reads
/// (4 GiB): a larger file could not be run anyway.
pub const DEFAULT_MAX_BYTES: u64 = MAX_INPUT_BYTES;

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            timeout: DEFAULT_TIMEOUT,
            min_rate: DEFAULT_MIN_RATE,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

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

/// Whether fetching `dataset` is its first use: it is not pinned (a file
/// without a size or a SHA-256), so what the fetch finds is trusted and
/// recorded.
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
/// its size and SHA-256: exit 2 for an entry that cannot be fetched (a
/// file name that is not a plain name, no files listed, no trusted
/// `base_url` for a first use), 1 for a transfer, a stall or a
/// verification failure, or a link where a file would be (naming the
/// file).
pub fn fetch(
    dataset: &Dataset,
    dir: &Path,
    options: &FetchOptions,
    observer: &dyn FetchObserver,
) -> Result<Vec<DatasetFile>, Error> {
    for file in &dataset.files {
        check_file_name(&file.name)
            .map_err(|e| Error::input(format!("dataset {}: {e}", dataset.name)))?;
    }
    let first_use = is_first_use(dataset);
    if first_use && dataset.files.is_empty() {
        return Err(Error::input(format!(
            "dataset {}: unpinned ({}) and no file names listed: nothing to fetch. A local copy can be \
             pinned under a name of its own (`arbor data pin DIR --name my-copy`); it is not the \
             registry's corpus, so a recipe run of it is stamped `unpinned_dataset`",
            dataset.name,
            dataset.unpinned.as_deref().unwrap_or("no size and SHA-256 per file"),
        )));
    }
    if first_use && !trusted_source(&dataset.base_url) {
        return Err(Error::input(format!(
            "dataset {}: unpinned (a file without a size or a SHA-256), and its base URL `{}` is \
             not an https source: a first fetch is trusted only from the entry's own https source",
            dataset.name, dataset.base_url
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", dir.display())))?;
    let tls = endpoint::tls_config(&dataset.base_url, &TlsOptions::default())?;
    let client = endpoint::reqwest_builder(tls.as_ref())
        .connect_timeout(options.timeout)
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
            runtime.block_on(fetch_file(&client, &url, file, dir, options, observer))?;
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

/// A duration in words: `30 s`, `1.5 s`.
fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// What is at `path` when it is a regular file; `None` when nothing is.
/// Anything else (a symbolic link, a directory, a FIFO) is refused: a
/// fetch reads and writes only regular files in its directory, never
/// through a link.
fn regular_file(path: &Path) -> Result<Option<Metadata>, Error> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => Ok(Some(m)),
        Ok(m) if m.file_type().is_symlink() => Err(refused(path, "a symbolic link")),
        Ok(_) => Err(refused(path, "not a regular file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_failure(path, "inspect", e)),
    }
}

fn refused(path: &Path, what: &str) -> Error {
    Error::other(format!(
        "{}: {what}: refusing it (a fetch reads and writes only regular files of its own in \
         the directory, never through a link); remove it and fetch again",
        path.display()
    ))
}

/// The length of the `.part` at `path`, `None` when there is none;
/// refused, besides what [`regular_file`] refuses: a `.part` with other
/// hard links (writing it would write them).
fn part_len(path: &Path) -> Result<Option<u64>, Error> {
    let Some(m) = regular_file(path)? else {
        return Ok(None);
    };
    if links(&m) > 1 {
        return Err(refused(path, "a file with other hard links"));
    }
    Ok(Some(m.len()))
}

#[cfg(unix)]
fn links(m: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(m)
}

#[cfg(not(unix))]
fn links(_: &Metadata) -> u64 {
    1
}

/// Opens the `.part` at `path` as `how` says, never through a link
/// (`O_NOFOLLOW`, and `O_NONBLOCK` so that a FIFO put there meanwhile
/// cannot block the open), and checks that what it opened is a regular
/// file with no other link.
fn open_part(path: &Path, how: &mut OpenOptions) -> Result<File, Error> {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(how, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = how.open(path).map_err(|e| {
        part_len(path)
            .err()
            .unwrap_or_else(|| io_failure(path, "open", e))
    })?;
    let m = file
        .metadata()
        .map_err(|e| io_failure(path, "inspect", e))?;
    if !m.file_type().is_file() || links(&m) > 1 {
        return Err(refused(path, "not a regular file of its own"));
    }
    Ok(file)
}

/// Removes the regular file at `path`, if there is one.
fn remove_if_present(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_failure(path, "remove", e)),
        _ => Ok(()),
    }
}

/// One file in place: how, its SHA-256 and its size.
async fn fetch_file(
    client: &reqwest::Client,
    url: &str,
    file: &DatasetFile,
    dir: &Path,
    options: &FetchOptions,
    observer: &dyn FetchObserver,
) -> Result<(Fetched, String, u64), Error> {
    let dest = dir.join(&file.name);
    let part = part_path(dir, &file.name);
    let expected = file.sha256.as_deref();
    let in_place = regular_file(&dest)?;
    let mut part_have = part_len(&part)?;
    match expected {
        Some(expected) if in_place.is_some() => {
            let got = hash_file(&dest).map_err(|e| io_failure(&dest, "read", e))?;
            if got == expected {
                let size = in_place.map_or(0, |m| m.len());
                observer.progress(file.size.unwrap_or(size));
                return Ok((Fetched::Verified, got, size));
            }
            observer.mismatch(&file.name, &got, expected);
            remove_if_present(&dest)?;
        }
        Some(_) => {}
        None => {
            // A first use trusts only what its source sends now.
            remove_if_present(&dest)?;
            remove_if_present(&part)?;
            part_have = None;
        }
    }
    let transfer = Transfer {
        client,
        url,
        file,
        part: &part,
        options,
    };
    let mut have = part_have.unwrap_or(0);
    if have > transfer.limit() {
        have = 0;
    }
    let mut hasher = Sha256::new();
    if have > 0 {
        hash_prefix(&part, have, &mut hasher)?;
    }
    let mut resumed_from = have;
    let mut restarted_from = None;
    if file.size != Some(have) || have == 0 {
        match transfer.download(have, &mut hasher, observer).await {
            Ok(false) => {}
            Ok(true) => {
                restarted_from = Some(have).filter(|had| *had > 0);
                resumed_from = 0;
            }
            Err(e) => {
                if expected.is_none() {
                    let _ = std::fs::remove_file(&part);
                }
                return Err(e);
            }
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
    let size = part_len(&part)?.unwrap_or(0);
    // A rename replaces a link rather than following it; still, nothing
    // but a regular file of the fetch's own is replaced.
    regular_file(&dest)?;
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

/// One file's download into its `.part`.
struct Transfer<'a> {
    client: &'a reqwest::Client,
    url: &'a str,
    file: &'a DatasetFile,
    part: &'a Path,
    options: &'a FetchOptions,
}

impl Transfer<'_> {
    /// The most bytes the file may have: its size, or without one the cap.
    fn limit(&self) -> u64 {
        self.file.size.unwrap_or(self.options.max_bytes)
    }

    /// `what` went wrong, naming the file and its URL.
    fn failure(&self, what: impl std::fmt::Display) -> Error {
        Error::other(format!("{}: {}: {what}", self.file.name, self.url))
    }

    /// What becomes of the `written` bytes of a failed download: kept for
    /// a resume when a SHA-256 will check the whole file, else discarded.
    fn after(&self, written: u64) -> String {
        match (written, &self.file.sha256) {
            (0, _) => "run `arbor data fetch` again".to_string(),
            (_, Some(_)) => format!(
                "the {written} bytes so far are kept in {}: run `arbor data fetch` again to resume",
                self.part.display()
            ),
            (_, None) => format!(
                "the {written} bytes so far are discarded (with no SHA-256 to check a resume \
                 against, a fetch starts from byte 0): run `arbor data fetch` again"
            ),
        }
    }

    /// Downloads the file into the `.part` from byte `have` (whose bytes
    /// `hasher` has seen), every wait bounded by the options: whether the
    /// server sent the whole file instead (`hasher` restarted, the `.part`
    /// rewritten from byte 0).
    async fn download(
        &self,
        have: u64,
        hasher: &mut Sha256,
        observer: &dyn FetchObserver,
    ) -> Result<bool, Error> {
        let (file, url, timeout) = (self.file, self.url, self.options.timeout);
        let mut request = self.client.get(url);
        if have > 0 {
            request = request.header(RANGE, format!("bytes={have}-"));
        }
        let mut response = match tokio::time::timeout(timeout, request.send()).await {
            Err(_) => {
                return Err(self.failure(format!(
                "no response head within {} (--timeout, connecting and waiting for the head); {}",
                secs(timeout),
                self.after(have)
            )))
            }
            Ok(Err(e)) if e.is_connect() && e.is_timeout() => {
                return Err(self.failure(format!(
                    "cannot connect within {} (--timeout); {}",
                    secs(timeout),
                    self.after(have)
                )))
            }
            Ok(Err(e)) => return Err(self.failure(e)),
            Ok(Ok(response)) => response,
        };
        let mut restarted = false;
        let start = match response.status() {
            StatusCode::PARTIAL_CONTENT if have > 0 => {
                let total = check_range(&response, have, file)?;
                if let Some(total) = total.filter(|t| file.size.is_none() && *t > self.limit()) {
                    return Err(self.refuse_over_cap(&format!("announces {total} bytes, over")));
                }
                have
            }
            StatusCode::OK => {
                // The whole file, whatever was asked: the `.part` is
                // overwritten from byte 0.
                *hasher = Sha256::new();
                restarted = true;
                0
            }
            other => {
                // A `.part` the server will not continue is started over next time.
                if have > 0 {
                    let _ = std::fs::remove_file(self.part);
                }
                return Err(self.failure(format!("HTTP {other}")));
            }
        };
        if let Some(announced) = header_u64(&response, CONTENT_LENGTH.as_str()) {
            let total = start.saturating_add(announced);
            match file.size {
                Some(size) if total != size => {
                    return Err(Error::other(format!(
                        "{}: the server announces {announced} bytes from byte {start} ({total} in all), the registry says {size}: refusing the file",
                        file.name,
                    )));
                }
                None if total > self.limit() => {
                    return Err(self.refuse_over_cap(&format!("announces {total} bytes, over")))
                }
                _ => {}
            }
        }
        let mut out = part_for_writing(self.part, start)?;
        observer.progress(start);
        let limit = self.limit();
        let mut written = start;
        // The bytes of the current stretch of `timeout`, for the least rate.
        let (mut since, mut recent) = (Instant::now(), 0u64);
        loop {
            let chunk = match tokio::time::timeout(timeout, response.chunk()).await {
                Err(_) => {
                    return Err(self.failure(format!(
                        "no byte for {} at byte {written} (--timeout); {}",
                        secs(timeout),
                        self.after(written)
                    )))
                }
                Ok(Err(e)) => {
                    return Err(self.failure(format!(
                        "download interrupted at byte {written} ({e}); {}",
                        self.after(written)
                    )))
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
            let len = chunk.len() as u64;
            if written.saturating_add(len) > limit {
                drop(out);
                let Some(size) = file.size else {
                    return Err(self.refuse_over_cap("sent more than"));
                };
                let _ = std::fs::remove_file(self.part);
                return Err(Error::other(format!(
                    "{}: the server sent more than the registry's {size} bytes: refusing the file",
                    file.name
                )));
            }
            hasher.update(&chunk);
            out.write_all(&chunk)
                .map_err(|e| io_failure(self.part, "write", e))?;
            written += len;
            observer.progress(len);
            recent += len;
            let stretch = since.elapsed();
            if stretch >= timeout {
                let least = self.options.min_rate as f64 * stretch.as_secs_f64();
                if (recent as f64) < least {
                    return Err(self.failure(format!(
                        "{recent} bytes in the last {:.1} s at byte {written}, under the least rate of {} bytes/s \
                         (the server stalls, sending a little now and then); {}",
                        stretch.as_secs_f64(),
                        self.options.min_rate,
                        self.after(written)
                    )));
                }
                (since, recent) = (Instant::now(), 0);
            }
        }
        out.sync_all()
            .map_err(|e| io_failure(self.part, "write", e))?;
        if let Some(size) = file.size.filter(|s| *s != written) {
            return Err(Error::other(format!(
                "{}: the server sent {written} bytes, the registry says {size}; {}",
                file.name,
                self.after(written)
            )));
        }
        Ok(restarted)
    }

    /// A file of no registry size that would pass the cap (`what` the
    /// server did): its `.part` removed, the error.
    fn refuse_over_cap(&self, what: &str) -> Error {
        let _ = std::fs::remove_file(self.part);
        self.failure(format!(
            "the server {what} --max-bytes ({}), the cap on a file the registry gives no size \
             for: refusing the file, nothing of it kept; give a larger --max-bytes if it is that large",
            show_bytes(self.options.max_bytes)
        ))
    }
}

/// Feeds the first `len` bytes of the `.part` at `path` to `hasher`.
fn hash_prefix(path: &Path, len: u64, hasher: &mut Sha256) -> Result<(), Error> {
    let file = open_part(path, OpenOptions::new().read(true))?;
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

/// The `.part` cut to `start` bytes, for appending: for byte 0 a new file
/// (whatever was there removed first), else the one in place.
fn part_for_writing(part: &Path, start: u64) -> Result<File, Error> {
    let mut out = if start == 0 {
        remove_if_present(part)?;
        open_part(part, OpenOptions::new().write(true).create_new(true))?
    } else {
        let out = open_part(part, OpenOptions::new().write(true))?;
        out.set_len(start)
            .map_err(|e| io_failure(part, "truncate", e))?;
        out
    };
    out.seek(SeekFrom::Start(start))
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
/// START-END/TOTAL`) and its total must be the registry's size: the
/// total, when it gives one.
fn check_range(
    response: &reqwest::Response,
    have: u64,
    file: &DatasetFile,
) -> Result<Option<u64>, Error> {
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
            Ok(total)
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
