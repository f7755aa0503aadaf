//! Whether the inputs of `arbor merge` are the N shards of one plan or
//! run: the same workload, policy and seed, the same N, every index once.
//!
//! Owns the check and its words (exit 2, naming the input and what
//! differs); both merges (`timeline`, `run_dir`) give it each input's
//! [`Identity`]. Reads no file.

use arbor_error::Error;

/// What a shard says of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The input as the user named it.
    pub name: String,
    pub index: u32,
    pub count: u32,
    pub seed: u64,
    /// SHA-256 of the compiled workload.
    pub workload: String,
    /// SHA-256 of the policy without its shard.
    pub policy: String,
}

/// The positions of `shards` in shard-index order, once they are shown
/// to be the N shards of one plan.
pub fn in_index_order(shards: &[Identity]) -> Result<Vec<usize>, Error> {
    let Some(first) = shards.first() else {
        return Err(Error::input("expected every shard, got none"));
    };
    for s in shards {
        let differs = if s.count != first.count {
            Some(format!(
                "shard count {} (the first has {})",
                s.count, first.count
            ))
        } else if s.seed != first.seed {
            Some(format!("seed {} (the first has {})", s.seed, first.seed))
        } else if s.workload != first.workload {
            Some("another workload (its compiled trees differ)".to_string())
        } else if s.policy != first.policy {
            Some("another policy (settings other than --shard differ)".to_string())
        } else {
            None
        };
        if let Some(differs) = differs {
            return Err(Error::input(format!(
                "{}: not a shard of the same plan as {}: {differs}",
                s.name, first.name
            )));
        }
    }
    let count = first.count as usize;
    let mut by_index: Vec<Option<usize>> = vec![None; count];
    for (i, s) in shards.iter().enumerate() {
        match by_index.get_mut(s.index as usize) {
            Some(Some(other)) => {
                return Err(Error::input(format!(
                    "{} and {}: both are shard {}/{count}",
                    shards[*other].name, s.name, s.index
                )))
            }
            Some(slot) => *slot = Some(i),
            None => {
                return Err(Error::input(format!(
                    "{}: shard {}/{count} is out of range",
                    s.name, s.index
                )))
            }
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|&k| by_index[k].is_none())
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::input(format!(
            "missing shard {}: every index from 0 to {} must be given once",
            missing.join(", "),
            count - 1
        )));
    }
    Ok(by_index.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(name: &str, index: u32, count: u32) -> Identity {
        Identity {
            name: name.to_string(),
            index,
            count,
            seed: 1,
            workload: "w".into(),
            policy: "p".into(),
        }
    }

    fn refused(shards: &[Identity]) -> String {
        match in_index_order(shards) {
            Ok(order) => panic!("accepted as {order:?}"),
            Err(f) => {
                assert!(f.is_input(), "{}", f.message);
                f.message
            }
        }
    }

    #[test]
    fn shards_come_back_in_index_order_or_are_refused_by_name() {
        let order = in_index_order(&[shard("c", 2, 3), shard("a", 0, 3), shard("b", 1, 3)]);
        assert_eq!(order.ok(), Some(vec![1, 2, 0]));
        let other_seed = Identity {
            seed: 9,
            ..shard("b", 1, 2)
        };
        assert!(refused(&[shard("a", 0, 2), other_seed]).contains("b: not a shard"));
        let other_policy = Identity {
            policy: "q".into(),
            ..shard("b", 1, 2)
        };
        assert!(refused(&[shard("a", 0, 2), other_policy]).contains("another policy"));
        assert!(refused(&[shard("a", 0, 2), shard("b", 0, 2)]).contains("both are shard 0/2"));
        assert!(refused(&[shard("a", 0, 3), shard("b", 2, 3)]).contains("missing shard 1/3"));
        assert!(refused(&[shard("a", 0, 2), shard("b", 1, 3)]).contains("shard count 3"));
        assert!(refused(&[]).contains("none"));
    }
}
