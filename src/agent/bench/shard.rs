//! Spreading one benchmark over machines and putting it back together:
//! `--shard K/N` keeps the K-th of N slices of the tasks, and `bench report`
//! merges the results of several runs.
//!
//! A task's slice is a stable hash (XXH3, a fixed specification) of its id
//! alone, not of its position or its source's path: every machine, whatever
//! its task list's order, its directory names or `--limit`, puts a task in
//! the same slice, and all of a task's formats and modes run on the same
//! machine (so the paired test pairs within one run).
//!
//! Owns: parsing a shard, which tasks it holds, and merging record sets
//! (one record per job; a duplicate with another outcome is a conflict the
//! caller reports). Does not own: reading or writing files (the CLI).
//!
//! Invariant: the N slices of a task list are disjoint and together the
//! whole list; merging is independent of how records were split.

use std::collections::HashMap;

use serde::Serialize;

use super::{Key, Record};

/// The K-th (1-based) of N slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which slice, 1..=n.
    pub k: u64,
    /// How many.
    pub n: u64,
}

/// Why `--shard` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// Not `K/N` with two whole numbers.
    #[error("--shard {given:?}: expected K/N, two whole numbers (for example 1/3)")]
    Malformed {
        /// What was given.
        given: String,
    },
    /// `K` is 0 or above `N`.
    #[error("--shard {k}/{n}: K must be from 1 to N")]
    OutOfRange {
        /// K.
        k: u64,
        /// N.
        n: u64,
    },
}

impl Shard {
    /// Reads `K/N` (1 ≤ K ≤ N).
    ///
    /// # Errors
    ///
    /// Not two whole numbers, or K out of 1..=N.
    pub fn parse(given: &str) -> Result<Shard, ShardError> {
        let malformed = || ShardError::Malformed {
            given: given.to_owned(),
        };
        let (k, n) = given.trim().split_once('/').ok_or_else(malformed)?;
        let k: u64 = k.trim().parse().map_err(|_| malformed())?;
        let n: u64 = n.trim().parse().map_err(|_| malformed())?;
        if k == 0 || k > n {
            return Err(ShardError::OutOfRange { k, n });
        }
        Ok(Shard { k, n })
    }

    /// Whether the task with this id is in this slice.
    pub fn holds(&self, task_id: &str) -> bool {
        xxhash_rust::xxh3::xxh3_64(task_id.as_bytes()) % self.n == self.k - 1
    }
}

/// The same job found twice with different outcomes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    /// The record kept (the first seen).
    pub kept: Record,
    /// The one dropped.
    pub dropped: Record,
}

/// Record sets merged.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Merged {
    /// One record per job, in the order first seen.
    pub records: Vec<Record>,
    /// Duplicates whose outcome differs from the kept record's.
    pub conflicts: Vec<Conflict>,
    /// Duplicates with the same outcome (dropped silently).
    pub duplicates: usize,
}

/// Whether two records of one job say the same thing: pass, failure kind,
/// tries and tokens (time and words for people aside).
fn same_outcome(a: &Record, b: &Record) -> bool {
    (a.pass, a.failure, a.tries, a.tokens_in, a.tokens_out)
        == (b.pass, b.failure, b.tries, b.tokens_in, b.tokens_out)
}

/// Merges `sets` in order: the first record of each job is kept.
pub fn merge<I>(sets: I) -> Merged
where
    I: IntoIterator<Item = Vec<Record>>,
{
    let mut out = Merged::default();
    let mut seen: HashMap<Key, usize> = HashMap::new();
    for set in sets {
        for r in set {
            match seen.get(&r.key()) {
                Some(&i) => {
                    let kept = &out.records[i];
                    if same_outcome(kept, &r) {
                        out.duplicates += 1;
                    } else {
                        out.conflicts.push(Conflict {
                            kept: kept.clone(),
                            dropped: r,
                        });
                    }
                }
                None => {
                    seen.insert(r.key(), out.records.len());
                    out.records.push(r);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{FailureKind, Mode};
    use super::*;

    #[test]
    fn parses_k_of_n() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { k: 2, n: 3 }));
        assert_eq!(Shard::parse(" 1 / 1 "), Ok(Shard { k: 1, n: 1 }));
        assert!(matches!(
            Shard::parse("0/3"),
            Err(ShardError::OutOfRange { k: 0, n: 3 })
        ));
        assert!(matches!(
            Shard::parse("4/3"),
            Err(ShardError::OutOfRange { .. })
        ));
        for bad in ["3", "a/b", "1/", "/2", "-1/2", ""] {
            assert!(
                matches!(Shard::parse(bad), Err(ShardError::Malformed { .. })),
                "{bad}"
            );
        }
    }

    /// Every task is in exactly one slice, and the slices are not all one.
    #[test]
    fn slices_partition_the_tasks() {
        let ids: Vec<String> = (0..300).map(|i| format!("task-{i}")).collect();
        for n in 1..=5 {
            let mut sizes = vec![0; n as usize];
            for id in &ids {
                let holders: Vec<u64> = (1..=n).filter(|&k| Shard { k, n }.holds(id)).collect();
                assert_eq!(holders.len(), 1, "{id} in {holders:?} of {n}");
                sizes[(holders[0] - 1) as usize] += 1;
            }
            for s in &sizes {
                assert!(*s > 300 / n as usize / 2, "{sizes:?}");
            }
        }
        // Stable across builds and machines: XXH3 is a fixed function, so a
        // task's slice is too.
        assert_eq!(
            xxhash_rust::xxh3::xxh3_64(b"calc"),
            10_103_833_520_561_394_210
        );
    }

    fn rec(task: &str, pass: bool, ms: u64) -> Record {
        Record {
            task: task.into(),
            source: "s".into(),
            model: "m".into(),
            format: "udiff".into(),
            mode: Mode::Tool,
            pass,
            tries: 1,
            failure: (!pass).then_some(FailureKind::WrongResult),
            tokens_in: 10,
            tokens_out: 2,
            cost: None,
            ms,
            turns: 2,
            detail: None,
            wrong_place: false,
            tier: None,
            ending: None,
        }
    }

    #[test]
    fn merge_dedupes_and_reports_conflicts() {
        let m = merge([
            vec![rec("a", true, 5), rec("b", false, 5)],
            vec![rec("a", true, 9), rec("b", true, 9), rec("c", true, 1)],
        ]);
        let tasks: Vec<&str> = m.records.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(tasks, ["a", "b", "c"]);
        assert_eq!(m.records[0].ms, 5, "the first seen is kept");
        assert_eq!(m.duplicates, 1, "a: same outcome, another time");
        assert_eq!(m.conflicts.len(), 1);
        assert_eq!(m.conflicts[0].kept.task, "b");
        assert!(!m.conflicts[0].kept.pass && m.conflicts[0].dropped.pass);
    }
}
