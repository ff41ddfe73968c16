//! Whether one format beats another for the same model, or the difference
//! is noise: an exact McNemar test on the tasks both formats ran, and from
//! it the per-model verdicts of the summary and the choice `--recommend`
//! writes.
//!
//! Two formats of one model (and mode) ran the same tasks; only the tasks
//! where exactly one of them passed (the discordant pairs, `b` and `c`) say
//! anything about which is better. Under "no difference" each discordant
//! task is a fair coin, so the two-sided p-value is the binomial
//! probability of a split at least as lopsided as `b : c`. It is exact, not
//! the chi-square approximation, because the counts here are small.
//!
//! Owns: the test, the ranking of formats, verdicts and the recommendation.
//! Does not own: words (`words`), or writing anything (`recommend`, the CLI).
//!
//! Invariant: a pure function of the records, in any order; rankings break
//! ties the same way every time (passes, then fewer tokens per task, then
//! `Format::ALL`'s order, then mode).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Mode, Record};

/// The level below which a difference counts as real.
pub const ALPHA: f64 = 0.05;

/// The exact two-sided McNemar p-value for `b` and `c` discordant pairs:
/// `min(1, 2 · P[X ≤ min(b, c)])` for `X ~ Binomial(b + c, 1/2)`; 1 when
/// there are none.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // In logarithms: 0.5^n underflows for n above about a thousand.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0_f64;
    let mut tail = 0.0_f64;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// A format in a mode: what a model is measured with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Arm {
    /// The format's name.
    pub format: String,
    /// The mode.
    pub mode: Mode,
}

/// One model's arm, as ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
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
    /// Mean tokens (in + out) per job.
    pub tokens_per_task: f64,
}

/// Two arms of one model compared on the tasks both ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// The model.
    pub model: String,
    /// The better-ranked arm's format.
    pub format_a: String,
    /// Its mode.
    pub mode_a: Mode,
    /// The other arm's format.
    pub format_b: String,
    /// Its mode.
    pub mode_b: Mode,
    /// Tasks both ran.
    pub common: u64,
    /// Tasks only `a` passed.
    pub only_a: u64,
    /// Tasks only `b` passed.
    pub only_b: u64,
    /// The exact McNemar p-value.
    pub p_value: f64,
    /// `p_value < ALPHA`.
    pub distinguishable: bool,
}

/// Per model and mode: the best format, and whether the runner-up is
/// distinguishable from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The model.
    pub model: String,
    /// The mode.
    pub mode: Mode,
    /// The best-ranked format.
    pub best: String,
    /// Its pass rate.
    pub best_pass_rate: f64,
    /// The second-ranked format (`None`: only one was measured).
    pub runner_up: Option<String>,
    /// Its pass rate.
    pub runner_up_pass_rate: Option<f64>,
    /// The test between the two (`None`: only one format).
    pub test: Option<Pair>,
    /// Whether the best is distinguishable from the runner-up (false with
    /// only one format: there is nothing to distinguish it from).
    pub distinguishable: bool,
}

/// What `--recommend` writes for one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The model as named in the results.
    pub model: String,
    /// The chosen arm.
    pub choice: Standing,
    /// The best-ranked arm (the choice, unless it was indistinguishable
    /// from a cheaper one).
    pub best: Standing,
    /// The runner-up, when there was one, and its test against the best.
    pub runner_up: Option<(Standing, Pair)>,
    /// Why: `true` the best is distinguishable from the runner-up;
    /// `false` it is not, and the choice is the one with the fewest tokens
    /// per task among the arms not distinguishable from the best.
    pub distinguishable: bool,
}

fn rank(format: &str) -> usize {
    crate::Format::ALL
        .iter()
        .position(|f| f.name() == format)
        .unwrap_or(usize::MAX)
}

/// One model's jobs: arm → (source, task) → the record.
type Arms<'a> = BTreeMap<Arm, BTreeMap<(String, String), &'a Record>>;

/// The records, grouped by model.
fn group(records: &[Record]) -> BTreeMap<String, Arms<'_>> {
    let mut out: BTreeMap<String, Arms<'_>> = BTreeMap::new();
    for r in records {
        out.entry(r.model.clone())
            .or_default()
            .entry(Arm {
                format: r.format.clone(),
                mode: r.mode,
            })
            .or_default()
            .insert((r.source.clone(), r.task.clone()), r);
    }
    out
}

fn standing(arm: &Arm, jobs: &BTreeMap<(String, String), &Record>) -> Standing {
    let tasks = jobs.len() as u64;
    let passed = jobs.values().filter(|r| r.pass).count() as u64;
    let tokens: u64 = jobs.values().map(|r| r.tokens_in + r.tokens_out).sum();
    Standing {
        format: arm.format.clone(),
        mode: arm.mode,
        tasks,
        passed,
        pass_rate: passed as f64 / tasks.max(1) as f64,
        tokens_per_task: tokens as f64 / tasks.max(1) as f64,
    }
}

/// Ranks arms best first: pass rate, then fewer tokens per task, then
/// format order, then mode.
fn ranked(arms: &Arms<'_>) -> Vec<Standing> {
    let mut out: Vec<Standing> = arms.iter().map(|(a, jobs)| standing(a, jobs)).collect();
    out.sort_by(|x, y| {
        y.pass_rate
            .total_cmp(&x.pass_rate)
            .then(x.tokens_per_task.total_cmp(&y.tokens_per_task))
            .then(rank(&x.format).cmp(&rank(&y.format)))
            .then(x.format.cmp(&y.format))
            .then(x.mode.cmp(&y.mode))
    });
    out
}

fn pair(model: &str, a: &Standing, b: &Standing, arms: &Arms<'_>) -> Pair {
    let empty = BTreeMap::new();
    let get = |s: &Standing| {
        arms.get(&Arm {
            format: s.format.clone(),
            mode: s.mode,
        })
        .unwrap_or(&empty)
    };
    let (ja, jb) = (get(a), get(b));
    let (mut common, mut only_a, mut only_b) = (0, 0, 0);
    for (task, ra) in ja {
        let Some(rb) = jb.get(task) else { continue };
        common += 1;
        match (ra.pass, rb.pass) {
            (true, false) => only_a += 1,
            (false, true) => only_b += 1,
            _ => {}
        }
    }
    let p_value = mcnemar_exact(only_a, only_b);
    Pair {
        model: model.to_owned(),
        format_a: a.format.clone(),
        mode_a: a.mode,
        format_b: b.format.clone(),
        mode_b: b.mode,
        common,
        only_a,
        only_b,
        p_value,
        distinguishable: p_value < ALPHA,
    }
}

/// Every pair of formats of one model and mode, the better-ranked first:
/// models in order, then pairs by rank.
pub fn pairs(records: &[Record]) -> Vec<Pair> {
    let mut out = Vec::new();
    for (model, arms) in group(records) {
        let modes: BTreeSet<Mode> = arms.keys().map(|a| a.mode).collect();
        for mode in modes {
            let arms: Arms<'_> = arms
                .iter()
                .filter(|(a, _)| a.mode == mode)
                .map(|(a, j)| (a.clone(), j.clone()))
                .collect();
            let order = ranked(&arms);
            for (i, a) in order.iter().enumerate() {
                for b in &order[i + 1..] {
                    out.push(pair(&model, a, b, &arms));
                }
            }
        }
    }
    out
}

/// Per model and mode: the best format and whether it is distinguishable
/// from the runner-up.
pub fn verdicts(records: &[Record]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (model, arms) in group(records) {
        let modes: BTreeSet<Mode> = arms.keys().map(|a| a.mode).collect();
        for mode in modes {
            let arms: Arms<'_> = arms
                .iter()
                .filter(|(a, _)| a.mode == mode)
                .map(|(a, j)| (a.clone(), j.clone()))
                .collect();
            let order = ranked(&arms);
            let Some(best) = order.first() else { continue };
            let test = order.get(1).map(|b| pair(&model, best, b, &arms));
            out.push(Verdict {
                model: model.clone(),
                mode,
                best: best.format.clone(),
                best_pass_rate: best.pass_rate,
                runner_up: order.get(1).map(|s| s.format.clone()),
                runner_up_pass_rate: order.get(1).map(|s| s.pass_rate),
                distinguishable: test.as_ref().is_some_and(|t| t.distinguishable),
                test,
            });
        }
    }
    out
}

/// Per model, over every format and mode it ran: the best-ranked arm when
/// it is distinguishable from the runner-up; otherwise, among the arms not
/// distinguishable from the best, the one with the fewest tokens per task.
pub fn recommend(records: &[Record]) -> Vec<Recommendation> {
    let mut out = Vec::new();
    for (model, arms) in group(records) {
        let order = ranked(&arms);
        let Some(best) = order.first() else { continue };
        let runner_up = order
            .get(1)
            .map(|b| (b.clone(), pair(&model, best, b, &arms)));
        let distinguishable = runner_up.as_ref().is_some_and(|(_, p)| p.distinguishable);
        let choice = if distinguishable {
            best.clone()
        } else {
            order
                .iter()
                .filter(|s| *s == best || !pair(&model, best, s, &arms).distinguishable)
                .min_by(|x, y| x.tokens_per_task.total_cmp(&y.tokens_per_task))
                .unwrap_or(best)
                .clone()
        };
        out.push(Recommendation {
            model,
            choice,
            best: best.clone(),
            runner_up,
            distinguishable,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// Hand-computed: p = min(1, 2 · Σ_{i ≤ k} C(n, i) / 2^n).
    #[test]
    fn exact_p_values_match_hand_computation() {
        // No discordant pairs: nothing to tell them apart.
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // n = 1: 2 · 1/2 = 1.
        assert_eq!(mcnemar_exact(1, 0), 1.0);
        // 5 : 0 → 2 · 1/32 = 0.0625 (not below 0.05).
        assert!(close(mcnemar_exact(5, 0), 0.0625));
        assert!(close(mcnemar_exact(0, 5), 0.0625));
        // 6 : 0 → 2/64 = 0.03125.
        assert!(close(mcnemar_exact(6, 0), 0.03125));
        // 8 : 2 → 2 · (1 + 10 + 45) / 1024 = 112/1024 = 0.109375.
        assert!(close(mcnemar_exact(8, 2), 0.109_375));
        // 10 : 1 → 2 · (1 + 11) / 2048 = 24/2048 = 0.01171875.
        assert!(close(mcnemar_exact(1, 10), 0.011_718_75));
        // 3 : 3 → symmetric: capped at 1.
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        // Large counts do not underflow: 600 : 400 is far below 0.05, and
        // 500 : 500 is 1.
        let p = mcnemar_exact(600, 400);
        assert!(p > 0.0 && p < 1e-9, "{p}");
        assert_eq!(mcnemar_exact(2000, 2000), 1.0);
    }

    fn rec(task: &str, format: &str, mode: Mode, pass: bool, tokens: u64) -> Record {
        Record {
            task: task.into(),
            source: "s".into(),
            model: "m".into(),
            format: format.into(),
            mode,
            pass,
            tries: 1,
            failure: if pass {
                None
            } else {
                Some(super::super::FailureKind::WrongResult)
            },
            tokens_in: tokens,
            tokens_out: 0,
            cost: None,
            ms: 1,
            turns: 1,
            detail: None,
            wrong_place: false,
            tier: None,
            ending: None,
        }
    }

    /// `a` passes `a_pass` of `n` tasks and `b` the first `b_pass`: the
    /// discordant counts are the difference.
    fn two(n: usize, a_pass: usize, b_pass: usize, a_tok: u64, b_tok: u64) -> Vec<Record> {
        let mut out = Vec::new();
        for i in 0..n {
            let t = format!("t{i:02}");
            out.push(rec(&t, "hashline", Mode::Tool, i < a_pass, a_tok));
            out.push(rec(&t, "udiff", Mode::Tool, i < b_pass, b_tok));
        }
        out
    }

    #[test]
    fn a_clear_winner_is_distinguishable() {
        // hashline passes 10, udiff 3 of the same 10: 7 : 0 → p = 2/128.
        let records = two(10, 10, 3, 500, 100);
        let v = verdicts(&records);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].best, "hashline");
        assert_eq!(v[0].runner_up.as_deref(), Some("udiff"));
        let t = v[0].test.as_ref().unwrap();
        assert_eq!((t.common, t.only_a, t.only_b), (10, 7, 0));
        assert!(close(t.p_value, 2.0 / 128.0));
        assert!(v[0].distinguishable);
        let r = recommend(&records);
        assert_eq!(
            r[0].choice.format, "hashline",
            "the better one, though dearer"
        );
        assert!(r[0].distinguishable);
    }

    #[test]
    fn noise_is_not_distinguishable_and_the_cheaper_is_recommended() {
        // hashline 9, udiff 7 of 10: 2 : 0 → p = 0.5.
        let records = two(10, 9, 7, 500, 100);
        let v = verdicts(&records);
        assert_eq!(v[0].best, "hashline");
        assert!(!v[0].distinguishable);
        assert!(close(v[0].test.as_ref().unwrap().p_value, 0.5));
        let r = recommend(&records);
        assert_eq!(r[0].best.format, "hashline");
        assert_eq!(r[0].choice.format, "udiff", "cheaper, and not worse");
        assert!(!r[0].distinguishable);
        assert!(close(r[0].choice.tokens_per_task, 100.0));
    }

    #[test]
    fn pairs_cover_every_two_formats_of_a_mode_and_only_common_tasks() {
        let mut records = two(4, 4, 2, 10, 10);
        records.push(rec("t00", "whole", Mode::Tool, true, 10));
        // A text-mode record is another mode: never paired with tool mode.
        records.push(rec("t00", "whole", Mode::Text, false, 10));
        let p = pairs(&records);
        assert_eq!(p.len(), 3, "{p:#?}");
        let with_whole = p
            .iter()
            .find(|p| p.format_b == "whole" || p.format_a == "whole")
            .unwrap();
        assert_eq!(with_whole.common, 1);
        let v = verdicts(&records);
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].mode, Mode::Text);
        assert_eq!(v[1].runner_up, None);
        assert!(!v[1].distinguishable);
    }

    #[test]
    fn order_of_records_does_not_matter() {
        let mut records = two(12, 11, 5, 50, 40);
        let a = (verdicts(&records), pairs(&records), recommend(&records));
        records.reverse();
        assert_eq!(
            a,
            (verdicts(&records), pairs(&records), recommend(&records))
        );
    }
}
