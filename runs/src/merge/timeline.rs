//! Merging shard timelines: the lines of every shard's `--timeline`
//! file, interleaved play by play into the unsharded timeline.
//!
//! Owns the streaming copy of each play's lines in the order
//! `arbor_engine::shard::merge` gives. It reads the manifests through
//! `crate::shard_manifest`, has `merge::shards` check that they belong
//! together, and writes nothing else.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use arbor_engine::shard;

use super::shards::{self, Identity};
use crate::shard_manifest::ShardManifest;
use arbor_error::Error;

/// What a merge wrote.
#[derive(Debug)]
pub struct Written {
    pub shards: u32,
    pub lines: u64,
    /// Plays of two shards started at the same nanosecond.
    pub ties: u64,
}

/// Merges the timelines at `inputs` (each with its manifest) into `out`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Written, Error> {
    let mut manifests = Vec::with_capacity(inputs.len());
    for path in inputs {
        manifests.push(ShardManifest::read(path)?);
    }
    let identities: Vec<Identity> = inputs
        .iter()
        .zip(&manifests)
        .map(|(path, m)| Identity {
            name: path.display().to_string(),
            index: m.index,
            count: m.count,
            seed: m.seed,
            workload: m.workload.clone(),
            policy: m.policy.clone(),
        })
        .collect();
    let order = shards::in_index_order(&identities)?;
    // Shards in index order from here on.
    let blocks: Vec<Vec<shard::Block>> = order.iter().map(|&i| manifests[i].blocks()).collect();
    let merged = shard::merge(&blocks).map_err(Error::input)?;
    let mut readers = Vec::with_capacity(order.len());
    for &i in &order {
        let path = &inputs[i];
        let file = File::open(path)
            .map_err(|e| Error::input(format!("{}: cannot open: {e}", path.display())))?;
        readers.push((path, BufReader::with_capacity(1 << 20, file).lines()));
    }
    let file = File::create(out)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", out.display())))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let write_err =
        |e: std::io::Error| Error::other(format!("{}: cannot write: {e}", out.display()));
    let mut lines = 0u64;
    for (s, b) in merged.order {
        let (path, reader) = &mut readers[s];
        for _ in 0..blocks[s][b].turns {
            let line = match reader.next() {
                Some(Ok(line)) => line,
                Some(Err(e)) => {
                    return Err(Error::input(format!(
                        "{}: cannot read: {e}",
                        path.display()
                    )))
                }
                None => {
                    return Err(Error::input(format!(
                        "{}: ends before its manifest's plays do (a truncated or edited timeline)",
                        path.display()
                    )))
                }
            };
            writeln!(writer, "{line}").map_err(write_err)?;
            lines += 1;
        }
    }
    for (path, reader) in &mut readers {
        if reader.next().is_some() {
            return Err(Error::input(format!(
                "{}: holds more lines than its manifest's plays",
                path.display()
            )));
        }
    }
    writer.flush().map_err(write_err)?;
    Ok(Written {
        shards: order.len() as u32,
        lines,
        ties: merged.ties,
    })
}
