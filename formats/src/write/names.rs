//! Ids unique within one output: a format whose ids are file-wide
//! (sessions, requests, files) gets each agent's own name when it is
//! free, else the name with `#2`, `#3`, ... appended ([`Names`]); hash ids
//! of trees whose ids are per tree are kept apart from every other tree's
//! in formats whose ids are file-wide ([`FileIds`]).

use std::collections::{HashMap, HashSet};

use arbor_engine::model::HashScope;

/// The names given so far in one output.
#[derive(Debug, Default)]
pub struct Names {
    used: HashSet<String>,
}

impl Names {
    /// `wanted` if no earlier call got it, else the first free
    /// `wanted#N` (N from 2).
    pub fn claim(&mut self, wanted: &str) -> String {
        if self.used.insert(wanted.to_string()) {
            return wanted.to_string();
        }
        let mut n = 2u64;
        loop {
            let name = format!("{wanted}#{n}");
            if self.used.insert(name.clone()) {
                return name;
            }
            n += 1;
        }
    }
}

/// Hash ids renumbered into one space for the file, in order of first
/// appearance: global ids by their value, per-tree ids by tree.
#[derive(Default)]
pub struct FileIds {
    global: HashMap<u32, u32>,
    /// The current tree's per-tree ids.
    local: HashMap<u32, u32>,
    next: u32,
}

impl FileIds {
    /// Starts a tree: its per-tree ids are new ones.
    pub fn next_tree(&mut self) {
        self.local.clear();
    }

    /// An id of its own, shared with nothing.
    pub fn fresh(&mut self) -> u32 {
        let n = self.next;
        self.next = self.next.wrapping_add(1);
        n
    }

    /// The file's id of `id`, of the current tree's scope.
    pub fn id(&mut self, id: u32, scope: HashScope) -> u32 {
        let map = match scope {
            HashScope::Global => &mut self.global,
            HashScope::Local => &mut self.local,
        };
        let next = &mut self.next;
        *map.entry(id).or_insert_with(|| {
            let n = *next;
            *next = next.wrapping_add(1);
            n
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_name_gets_the_first_free_suffix() {
        let mut names = Names::default();
        assert_eq!(names.claim("a"), "a");
        assert_eq!(names.claim("a"), "a#2");
        assert_eq!(names.claim("a#3"), "a#3");
        assert_eq!(names.claim("a"), "a#4");
        assert_eq!(names.claim("b"), "b");
    }

    #[test]
    fn per_tree_ids_never_meet_other_trees_ids() {
        let mut ids = FileIds::default();
        ids.next_tree();
        let a: Vec<u32> = [7, 8, 7]
            .iter()
            .map(|&i| ids.id(i, HashScope::Local))
            .collect();
        ids.next_tree();
        let b: Vec<u32> = [7, 9]
            .iter()
            .map(|&i| ids.id(i, HashScope::Local))
            .collect();
        let g: Vec<u32> = [7, 7]
            .iter()
            .map(|&i| ids.id(i, HashScope::Global))
            .collect();
        ids.next_tree();
        let g2 = ids.id(7, HashScope::Global);
        assert_eq!((a, b, g, g2), (vec![0, 1, 0], vec![2, 3], vec![4, 4], 4));
    }
}
