//! `report.json`: everything a run (or a merge of runs) measured, as data —
//! the summary rows, the paired tests and verdicts, the count of results
//! written to a wrong place, skipped tasks and merge conflicts.
//!
//! Owns: the report's shape (the keys earlier versions wrote — `interrupted`,
//! `records`, `summary` — stay; the rest are additions). Does not own:
//! writing it (the CLI) or rendering it (`html`).
//!
//! Invariant: a pure function of its inputs; the records' order does not
//! matter, so a merge of shards reports what one run of them all would.

use serde::Serialize;

use super::paired::{self, Pair, Verdict};
use super::shard::Conflict;
use super::{Record, Skipped, Summary};

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The run was stopped before every job finished.
    pub interrupted: bool,
    /// Records the report rests on.
    pub records: usize,
    /// Per model × format × mode.
    pub summary: Summary,
    /// Per model and mode: the best format, and whether it is
    /// distinguishable from the runner-up.
    pub verdicts: Vec<Verdict>,
    /// Every two formats of a model and mode, compared.
    pub pairs: Vec<Pair>,
    /// Results that changed something the task leaves alone (must be 0).
    pub wrong_place: u64,
    /// Jobs found twice with different outcomes in merged results.
    pub conflicts: Vec<Conflict>,
}

impl Report {
    /// The report of `records`.
    pub fn of(
        records: &[Record],
        skipped: &[Skipped],
        interrupted: bool,
        conflicts: Vec<Conflict>,
    ) -> Report {
        Report {
            interrupted,
            records: records.len(),
            summary: Summary::of(records, skipped),
            verdicts: paired::verdicts(records),
            pairs: paired::pairs(records),
            wrong_place: records.iter().filter(|r| r.wrong_place).count() as u64,
            conflicts,
        }
    }
}
