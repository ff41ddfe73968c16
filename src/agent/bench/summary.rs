//! What a benchmark run measured: per model × format × mode, the pass rate
//! with its Wilson 95 % interval, tries, tokens, cost and failures by kind;
//! and `report.json`, the same as data.
//!
//! Owns: aggregating [`Record`]s (from this run and earlier ones in the same
//! results file alike). Does not own: the table's words (`words`) or where
//! the report is written (the CLI).
//!
//! Invariant: a summary is a pure function of the records (in any order):
//! rows sorted by model, format (in `Format::ALL`'s order), mode; kinds in
//! the contract's order.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{FailureKind, Mode, Record, Skipped};

/// The Wilson score interval at 95 % for `passes` out of `n` (`(0, 1)` for none).
pub fn wilson(passes: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n = n as f64;
    let p = passes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// One model × format × mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The model.
    pub model: String,
    /// The format.
    pub format: String,
    /// The mode.
    pub mode: Mode,
    /// Jobs finished.
    pub tasks: u64,
    /// Jobs passed.
    pub passed: u64,
    /// `passed / tasks`.
    pub pass_rate: f64,
    /// The Wilson 95 % interval of the pass rate.
    pub wilson_95: (f64, f64),
    /// Jobs that passed at their first try.
    pub passed_first_try: u64,
    /// Mean tries per job.
    pub mean_tries: f64,
    /// Prompt tokens, summed.
    pub tokens_in: u64,
    /// Completion tokens, summed.
    pub tokens_out: u64,
    /// Cost in dollars, summed, when every job had one.
    pub cost: Option<f64>,
    /// The median job's milliseconds.
    pub median_ms: u64,
    /// Failures by kind (kinds that occurred).
    pub failures: BTreeMap<FailureKind, u64>,
    /// Results that changed something the task leaves alone (must be 0).
    pub wrong_place: u64,
}

/// Every row, and the tasks that were skipped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// One per model × format × mode.
    pub rows: Vec<Row>,
    /// Tasks not run, and why.
    pub skipped: Vec<SkippedJson>,
}

/// A skipped task in `report.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedJson {
    /// Its source.
    pub source: String,
    /// The task.
    pub task: String,
    /// Why.
    pub reason: String,
}

impl Summary {
    /// Aggregates `records`.
    pub fn of(records: &[Record], skipped: &[Skipped]) -> Summary {
        let mut groups: BTreeMap<(String, String, Mode), Vec<&Record>> = BTreeMap::new();
        for r in records {
            groups
                .entry((r.model.clone(), r.format.clone(), r.mode))
                .or_default()
                .push(r);
        }
        let mut groups: Vec<_> = groups.into_iter().collect();
        // Formats in `Format::ALL`'s order (as `lancet formats` lists them).
        let rank = |f: &str| {
            crate::Format::ALL
                .iter()
                .position(|x| x.name() == f)
                .unwrap_or(usize::MAX)
        };
        groups.sort_by(|((m1, f1, o1), _), ((m2, f2, o2), _)| {
            (m1, rank(f1), f1, o1).cmp(&(m2, rank(f2), f2, o2))
        });
        let rows = groups
            .into_iter()
            .map(|((model, format, mode), rs)| {
                let tasks = rs.len() as u64;
                let passed = rs.iter().filter(|r| r.pass).count() as u64;
                let mut ms: Vec<u64> = rs.iter().map(|r| r.ms).collect();
                ms.sort_unstable();
                let mut failures = BTreeMap::new();
                for kind in rs.iter().filter_map(|r| r.failure) {
                    *failures.entry(kind).or_insert(0) += 1;
                }
                Row {
                    model,
                    format,
                    mode,
                    tasks,
                    passed,
                    pass_rate: passed as f64 / tasks.max(1) as f64,
                    wilson_95: wilson(passed, tasks),
                    passed_first_try: rs.iter().filter(|r| r.pass && r.tries <= 1).count() as u64,
                    mean_tries: rs.iter().map(|r| f64::from(r.tries)).sum::<f64>()
                        / tasks.max(1) as f64,
                    tokens_in: rs.iter().map(|r| r.tokens_in).sum(),
                    tokens_out: rs.iter().map(|r| r.tokens_out).sum(),
                    cost: rs.iter().map(|r| r.cost).sum(),
                    median_ms: ms.get(ms.len() / 2).copied().unwrap_or(0),
                    failures,
                    wrong_place: rs.iter().filter(|r| r.wrong_place).count() as u64,
                }
            })
            .collect();
        Summary {
            rows,
            skipped: skipped
                .iter()
                .map(|s| SkippedJson {
                    source: s.source.clone(),
                    task: s.id.clone(),
                    reason: s.reason.clone(),
                })
                .collect(),
        }
    }

    /// Kinds in the contract's order, for a table's columns.
    pub fn kinds() -> &'static [FailureKind] {
        FailureKind::ALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_known_values() {
        let (lo, hi) = wilson(8, 10);
        assert!(
            (lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(10, 10);
        assert!((lo - 0.7225).abs() < 1e-3 && (hi - 1.0).abs() < 1e-9);
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }
}
