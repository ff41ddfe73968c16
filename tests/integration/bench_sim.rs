//! `lancet bench`'s mistaken simulated models and `replay:DIR`, end to end:
//! the real binary, its loopback server, the provider, the loop, the tools,
//! the engine and its feedback. Every `sim:<mistake>` profile × format ×
//! mode lands where it claims ([`claim`]) on the react-edit fixtures, and a
//! replay of a run reproduces its records.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use lancet::Format;
use lancet::agent::bench::mistakes::claim;
use lancet::agent::bench::{Claim, FailureKind, Mistake, Mode, SimProfile, Source, sim, task};
use serde_json::Value;

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bench")
        .join(rel)
        .display()
        .to_string()
}

/// The two oh-my-pi react-edit fixtures, and one of the same layout whose
/// changed line occurs twice (so an ambiguous quote has a place).
fn sources() -> Vec<String> {
    vec![
        format!("react-edit:{}", data("react-edit")),
        format!("react-edit:{}", data("react-edit-twice")),
    ]
}

/// `lancet bench ARGS` in `cwd`, with no user configuration, no keys from
/// the environment and no terminal (the bench tests' one runner).
fn bench(cwd: &Path, args: &[String]) -> Output {
    super::bench::bench(cwd, None, args)
}

use super::bench::show;

fn results(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A run of `models` on the fixtures in every format and both modes.
fn run(dir: &Path, out: &Path, models: &[String], tries: u32) -> Vec<Value> {
    let mut args: Vec<String> = Vec::new();
    for s in sources() {
        args.extend(["-t".to_owned(), s]);
    }
    args.extend(
        [
            "-m",
            &models.join(","),
            "-f",
            "all",
            "--mode",
            "both",
            "--tries",
            &tries.to_string(),
            "-j",
            "2",
            "--json",
            "-o",
        ]
        .map(str::to_owned),
    );
    args.push(out.display().to_string());
    let output = bench(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    results(out)
}

/// Whether the profile's mistake has a place in the task's change in this
/// format and mode (its script differs from `sim:perfect`'s).
fn placed() -> BTreeMap<(String, String, String, Mode), bool> {
    let mut out = BTreeMap::new();
    for spec in sources() {
        let (tasks, _) = task::load(&Source::parse(&spec), None).unwrap();
        for t in &tasks {
            for &format in Format::ALL {
                for &mode in Mode::ALL {
                    let perfect = sim::script(t, format, mode, SimProfile::Perfect, 1).0;
                    for &mistake in Mistake::ALL {
                        let profile = SimProfile::Mistaken {
                            mistake,
                            stubborn: false,
                        };
                        let s = sim::script(t, format, mode, profile, 1).0;
                        out.insert(
                            (
                                mistake.name().to_owned(),
                                t.id.clone(),
                                format.name().to_owned(),
                                mode,
                            ),
                            s.turns() != perfect.turns(),
                        );
                    }
                }
            }
        }
    }
    out
}

fn mode_of(r: &Value) -> Mode {
    match r["mode"].as_str().unwrap() {
        "tool" => Mode::Tool,
        _ => Mode::Text,
    }
}

fn tier_rank(name: &str) -> usize {
    [
        "exact",
        "whitespace",
        "indent",
        "unicode",
        "fuzzy",
        "anchor",
    ]
    .iter()
    .position(|t| *t == name)
    .unwrap()
}

/// Each mistake's record on a task, read against its claim.
struct Case<'a> {
    mistake: Mistake,
    claim: Claim,
    placed: bool,
    record: &'a Value,
}

fn cases<'a>(
    records: &'a [Value],
    placed: &BTreeMap<(String, String, String, Mode), bool>,
) -> Vec<Case<'a>> {
    records
        .iter()
        .map(|r| {
            let name = r["model"].as_str().unwrap().strip_prefix("sim:").unwrap();
            let base = name.strip_suffix("-stubborn").unwrap_or(name);
            let mistake = *Mistake::ALL.iter().find(|m| m.name() == base).unwrap();
            let format = Format::from_name(r["format"].as_str().unwrap()).unwrap();
            let mode = mode_of(r);
            let key = (
                base.to_owned(),
                r["task"].as_str().unwrap().to_owned(),
                format.name().to_owned(),
                mode,
            );
            Case {
                mistake,
                claim: claim(mistake, format, mode),
                placed: placed[&key],
                record: r,
            }
        })
        .collect()
}

/// With one try, every profile × format × mode lands where it claims on
/// every task that gives its mistake a place (and passes, as `sim:perfect`
/// does, on a task that does not); every claim other than "perfect" is
/// exercised by at least one task, and a "recovered" claim reaches its
/// tier on at least one.
#[test]
fn every_mistake_lands_where_it_claims_on_the_first_try() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let models: Vec<String> = Mistake::ALL
        .iter()
        .map(|m| format!("sim:{}", m.name()))
        .collect();
    let records = run(dir.path(), &out, &models, 1);
    assert_eq!(records.len(), Mistake::ALL.len() * 3 * 5 * 2);
    let placed = placed();
    let mut exercised: BTreeSet<(Mistake, String, &str)> = BTreeSet::new();
    let mut at_tier: BTreeSet<(Mistake, String, &str)> = BTreeSet::new();
    for c in cases(&records, &placed) {
        let r = c.record;
        let at = (
            c.mistake,
            r["format"].as_str().unwrap().to_owned(),
            r["mode"].as_str().unwrap(),
        );
        if !c.placed || c.claim == Claim::Perfect {
            assert!(
                !c.placed,
                "a mistake in a format it claims not to exist in: {r}"
            );
            assert_eq!(r["pass"], true, "no place for the mistake, so perfect: {r}");
            assert_eq!(r["tries"], 1, "{r}");
            continue;
        }
        exercised.insert(at.clone());
        match c.claim {
            Claim::Perfect => unreachable!(),
            Claim::Recovered(tier) => {
                assert_eq!(r["pass"], true, "claimed recovered at {tier}: {r}");
                assert_eq!(r["tries"], 1, "{r}");
                let got = r["tier"].as_str().unwrap();
                assert!(
                    tier_rank(got) <= tier_rank(tier.name()),
                    "claimed {tier} at the loosest: {r}"
                );
                if got == tier.name() {
                    at_tier.insert(at);
                }
            }
            Claim::Fails(kind) => {
                assert_eq!(r["pass"], false, "claimed {}: {r}", kind.name());
                assert_eq!(r["failure"], kind.name(), "{r}");
                let tries = if kind == FailureKind::NoEdit { 0 } else { 1 };
                assert_eq!(r["tries"], tries, "{r}");
            }
        }
    }
    for &mistake in Mistake::ALL {
        for &format in Format::ALL {
            for &mode in Mode::ALL {
                let at = (mistake, format.name().to_owned(), mode.name());
                match claim(mistake, format, mode) {
                    Claim::Perfect => {}
                    Claim::Recovered(_) => {
                        assert!(exercised.contains(&at), "never exercised: {at:?}");
                        assert!(at_tier.contains(&at), "its tier never reached: {at:?}");
                    }
                    Claim::Fails(_) => assert!(exercised.contains(&at), "never exercised: {at:?}"),
                }
            }
        }
    }
}

/// With two tries: after the engine says an edit failed, a profile corrects
/// itself and passes on the second try, and its `-stubborn` variant repeats
/// the mistake and fails the same way; a recovered mistake passes on the
/// first; an edit that applied wrong, or no edit seen, gets no retry.
#[test]
fn a_profile_corrects_itself_after_the_feedback_and_a_stubborn_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let models: Vec<String> = Mistake::ALL
        .iter()
        .flat_map(|m| {
            [
                format!("sim:{}", m.name()),
                format!("sim:{}", m.stubborn_name()),
            ]
        })
        .collect();
    let records = run(dir.path(), &out, &models, 2);
    assert_eq!(records.len(), Mistake::ALL.len() * 2 * 3 * 5 * 2);
    let placed = placed();
    let mut retried = 0;
    for c in cases(&records, &placed) {
        let r = c.record;
        let stubborn = r["model"].as_str().unwrap().ends_with("-stubborn");
        match c.claim {
            _ if !c.placed => assert_eq!(r["pass"], true, "{r}"),
            Claim::Perfect | Claim::Recovered(_) => {
                assert_eq!(r["pass"], true, "{r}");
                assert_eq!(r["tries"], 1, "{r}");
            }
            Claim::Fails(kind @ (FailureKind::WrongResult | FailureKind::NoEdit)) => {
                assert_eq!(
                    r["failure"],
                    kind.name(),
                    "no retry after {}: {r}",
                    kind.name()
                );
            }
            Claim::Fails(kind) if stubborn => {
                assert_eq!(r["failure"], kind.name(), "{r}");
                assert_eq!(r["tries"], 2, "{r}");
            }
            Claim::Fails(_) => {
                assert_eq!(r["pass"], true, "the retry corrects it: {r}");
                assert_eq!(r["tries"], 2, "{r}");
                retried += 1;
            }
        }
    }
    assert!(retried > 20, "{retried}");
}

/// The fields a replay must reproduce: all but the wall clock and the
/// model's name.
fn comparable(r: &Value) -> Value {
    let mut r = r.clone();
    let o = r.as_object_mut().unwrap();
    o.remove("ms");
    o.remove("model");
    r
}

fn by_job(records: &[Value]) -> BTreeMap<String, Value> {
    records
        .iter()
        .map(|r| {
            let key = format!(
                "{}|{}|{}|{}",
                r["source"], r["task"], r["format"], r["mode"]
            );
            (key, comparable(r))
        })
        .collect()
}

/// A run with an out dir writes each job's transcript; `replay:` of that
/// dir answers every job from it and its records equal the run's, field by
/// field (the wall clock and the model's name aside): passes, failures,
/// tries, turns, tokens and tiers.
#[test]
fn a_replay_reproduces_the_records_of_the_run_it_replays() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let models = ["sim:invented-context-stubborn".to_owned()];
    let recorded = run(dir.path(), &first, &models, 2);
    let transcripts = std::fs::read_dir(first.join("transcripts"))
        .unwrap()
        .count();
    assert_eq!(transcripts, recorded.len());
    let second = dir.path().join("second");
    let replay = format!("replay:{}", first.display());
    let replayed = run(dir.path(), &second, std::slice::from_ref(&replay), 2);
    assert_eq!(replayed.len(), recorded.len());
    for r in &replayed {
        assert_eq!(r["model"], replay.as_str());
    }
    assert_eq!(by_job(&replayed), by_job(&recorded));
    // Both outcomes were replayed, a failure after two tries among them.
    assert!(recorded.iter().any(|r| r["pass"] == true));
    assert!(
        recorded
            .iter()
            .any(|r| r["failure"] == "not_found" && r["tries"] == 2)
    );
    // A replay is recorded too, and replays the same again.
    let third = dir.path().join("third");
    let again = run(
        dir.path(),
        &third,
        &[format!("replay:{}", second.join("transcripts").display())],
        2,
    );
    assert_eq!(by_job(&again), by_job(&recorded));
}

/// A replay with no transcript for a job fails that job as `provider`,
/// saying why, and runs the others; a directory with two models'
/// transcripts is ambiguous for every job; a directory that does not exist
/// is a usage error.
#[test]
fn a_replay_without_a_recording_is_a_provider_failure_per_job() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let args = |out: &PathBuf, models: &str, extra: &[String]| -> Vec<String> {
        let mut a = vec![
            "-t".to_owned(),
            format!("react-edit:{}", data("react-edit")),
        ];
        a.extend(extra.iter().cloned());
        a.extend(["-m", models, "-f", "udiff", "--json", "-o"].map(str::to_owned));
        a.push(out.display().to_string());
        a
    };
    let o = bench(dir.path(), &args(&first, "sim:perfect", &[]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // Replayed with one more task source: its jobs have no recording.
    let second = dir.path().join("second");
    let extra = ["-t".to_owned(), data("tasks")];
    let replay = format!("replay:{}", first.display());
    let o = bench(dir.path(), &args(&second, &replay, &extra));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let records = results(&second);
    assert_eq!(records.len(), 2 + 4);
    for r in &records {
        if r["source"] == "react-edit" {
            assert_eq!(r["pass"], true, "{r}");
        } else {
            assert_eq!(r["failure"], "provider", "{r}");
            assert_eq!(r["tries"], 0, "{r}");
            let detail = r["detail"].as_str().unwrap();
            assert!(
                detail.contains("no transcript") && detail.contains(r["task"].as_str().unwrap()),
                "{detail}"
            );
        }
    }
    // Two models' transcripts in one directory: every job is ambiguous.
    let o = bench(dir.path(), &args(&first, "sim:typo-in-quote", &[]));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let third = dir.path().join("third");
    let o = bench(dir.path(), &args(&third, &replay, &[]));
    assert_eq!(
        o.status.code(),
        Some(3),
        "every job failed to answer: {}",
        show(&o)
    );
    for r in results(&third) {
        assert_eq!(r["failure"], "provider", "{r}");
        let detail = r["detail"].as_str().unwrap();
        assert!(
            detail.contains("sim:perfect") && detail.contains("sim:typo-in-quote"),
            "{detail}"
        );
    }
    // A directory that is not there.
    let o = bench(
        dir.path(),
        &args(&dir.path().join("fourth"), "replay:nowhere", &[]),
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nowhere"));
}

/// The mistake a profile makes is fixed by `--seed` and the task: the same
/// seed gives the same script, and seeds move it.
#[test]
fn mistakes_are_deterministic_for_a_seed() {
    let (tasks, _) = task::load(&Source::parse(&sources()[0]), None).unwrap();
    let profile = SimProfile::Mistaken {
        mistake: Mistake::TypoInQuote,
        stubborn: false,
    };
    let script = |seed| sim::script(&tasks[0], Format::UnifiedDiff, Mode::Text, profile, seed).0;
    assert_eq!(script(1), script(1));
    let distinct: BTreeSet<String> = (1..20)
        .map(|s| format!("{:?}", script(s).turns()))
        .collect();
    assert!(distinct.len() > 1);
}
