//! Merging shard timelines: the lines of every shard's `--timeline`
//! file, interleaved play by play into the unsharded timeline.
//!
//! Owns the checks that the shards belong together (one workload, one
//! policy and seed, one N, every index once) and the streaming copy of
//! each play's lines in the order `arbor_engine::shard::merge` gives. It
//! reads the manifests through `merge::manifest` and writes nothing else.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use arbor_engine::shard;

use super::manifest::ShardManifest;
use crate::failure::Failure;

/// What a merge wrote.
#[derive(Debug)]
pub struct Written {
    pub shards: u32,
    pub lines: u64,
    /// Plays of two shards started at the same nanosecond.
    pub ties: u64,
}

/// Merges the timelines at `inputs` (each with its manifest) into `out`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Written, Failure> {
    let mut manifests = Vec::with_capacity(inputs.len());
    for path in inputs {
        manifests.push(ShardManifest::read(path)?);
    }
    let order = belong_together(inputs, &manifests)?;
    // Shards in index order from here on.
    let blocks: Vec<Vec<shard::Block>> = order.iter().map(|&i| manifests[i].blocks()).collect();
    let merged = shard::merge(&blocks).map_err(Failure::input)?;
    let mut readers = Vec::with_capacity(order.len());
    for &i in &order {
        let path = &inputs[i];
        let file = File::open(path)
            .map_err(|e| Failure::input(format!("{}: cannot open: {e}", path.display())))?;
        readers.push((path, BufReader::with_capacity(1 << 20, file).lines()));
    }
    let file = File::create(out)
        .map_err(|e| Failure::other(format!("{}: cannot create: {e}", out.display())))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let write_err =
        |e: std::io::Error| Failure::other(format!("{}: cannot write: {e}", out.display()));
    let mut lines = 0u64;
    for (s, b) in merged.order {
        let (path, reader) = &mut readers[s];
        for _ in 0..blocks[s][b].turns {
            let line = match reader.next() {
                Some(Ok(line)) => line,
                Some(Err(e)) => {
                    return Err(Failure::input(format!(
                        "{}: cannot read: {e}",
                        path.display()
                    )))
                }
                None => {
                    return Err(Failure::input(format!(
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
            return Err(Failure::input(format!(
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

/// The positions of the manifests in shard-index order, once they are
/// shown to be the N shards of one plan.
fn belong_together(inputs: &[PathBuf], manifests: &[ShardManifest]) -> Result<Vec<usize>, Failure> {
    let Some(first) = manifests.first() else {
        return Err(Failure::input(
            "expected the timelines of every shard, got none",
        ));
    };
    let name = |i: usize| inputs[i].display().to_string();
    for (i, m) in manifests.iter().enumerate() {
        let differs = if m.count != first.count {
            Some(format!(
                "shard count {} (the first has {})",
                m.count, first.count
            ))
        } else if m.seed != first.seed {
            Some(format!("seed {} (the first has {})", m.seed, first.seed))
        } else if m.workload != first.workload {
            Some("another workload (its compiled trees differ)".to_string())
        } else if m.policy != first.policy {
            Some("another policy (settings other than --shard differ)".to_string())
        } else {
            None
        };
        if let Some(differs) = differs {
            return Err(Failure::input(format!(
                "{}: not a shard of the same plan as {}: {differs}",
                name(i),
                name(0)
            )));
        }
    }
    let count = first.count as usize;
    let mut by_index: Vec<Option<usize>> = vec![None; count];
    for (i, m) in manifests.iter().enumerate() {
        match by_index.get_mut(m.index as usize) {
            Some(Some(other)) => {
                return Err(Failure::input(format!(
                    "{} and {}: both are shard {}/{count}",
                    name(*other),
                    name(i),
                    m.index
                )))
            }
            Some(slot) => *slot = Some(i),
            None => {
                return Err(Failure::input(format!(
                    "{}: shard {}/{count} is out of range",
                    name(i),
                    m.index
                )))
            }
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|&k| by_index[k].is_none())
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Failure::input(format!(
            "missing shard {}: every index from 0 to {} must be given once",
            missing.join(", "),
            count - 1
        )));
    }
    Ok(by_index.into_iter().flatten().collect())
}
