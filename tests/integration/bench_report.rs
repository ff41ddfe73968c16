//! `lancet bench`'s reports end to end: `--shard` and `bench report`
//! (shards merged equal one run), report.html in a real headless browser
//! (Debian's chromium: no script errors, the DOM's numbers are
//! report.json's), and `--recommend` round-tripping through `lancet run
//! --edit-format auto` with the scripted loopback model.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::llm_server::{LlmServer, Scripted};

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bench")
        .join(rel)
        .display()
        .to_string()
}

/// `lancet ARGS` in `cwd`, with the user configuration in `cwd/.config`,
/// no keys from the environment (the scripted server's endpoint when given)
/// and no terminal.
fn lancet(cwd: &Path, endpoint: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lancet"));
    cmd.args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", cwd.join(".config"))
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null());
    if let Some(url) = endpoint {
        cmd.env("OPENAI_BASE_URL", url);
    }
    cmd.output().unwrap()
}

use super::bench::show;

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A report without its timings (they differ between any two runs) and
/// token counts (a simulated model's prompt holds the job's scratch path,
/// whose length varies from run to run).
fn untimed(mut v: Value) -> Value {
    for row in v["summary"]["rows"].as_array_mut().unwrap() {
        let row = row.as_object_mut().unwrap();
        for key in ["median_ms", "tokens_in", "tokens_out"] {
            assert!(row.remove(key).is_some(), "{key}");
        }
    }
    v
}

fn keys(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {} {} {}",
                r["source"], r["task"], r["format"], r["mode"]
            )
        })
        .collect();
    out.sort();
    out
}

/// Shards 1/3, 2/3 and 3/3, merged by `bench report`, equal an unsharded
/// run's report (timings aside): the slices are disjoint and cover every
/// job, and report.json and report.html are rebuilt in the output directory.
#[test]
fn shards_merged_equal_an_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = data("tasks");
    let react = format!("react-edit:{}", data("react-edit"));
    let base = [
        "bench",
        "-t",
        &tasks,
        "-t",
        &react,
        "-m",
        "sim:perfect",
        "-f",
        "udiff,hashline",
        "-j",
        "2",
        "-o",
    ];
    let run = |out: &str, extra: &[&str]| {
        let args: Vec<&str> = base
            .iter()
            .copied()
            .chain([out])
            .chain(extra.iter().copied())
            .collect();
        let o = lancet(dir.path(), None, &args);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    };
    let full = dir.path().join("full");
    run(full.to_str().unwrap(), &[]);
    let shards: Vec<PathBuf> = (1..=3).map(|k| dir.path().join(format!("s{k}"))).collect();
    for (k, s) in shards.iter().enumerate() {
        run(s.to_str().unwrap(), &["--shard", &format!("{}/3", k + 1)]);
    }
    // Disjoint, and together every job.
    let mut union: Vec<String> = shards.iter().flat_map(|s| keys(s)).collect();
    let n = union.len();
    union.sort();
    union.dedup();
    assert_eq!(union.len(), n, "a job ran in two shards");
    assert_eq!(union, keys(&full));
    assert!(
        shards.iter().filter(|s| !keys(s).is_empty()).count() >= 2,
        "the test's tasks all fell in one slice"
    );
    let merged = dir.path().join("merged");
    let mut args = vec!["bench", "report"];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    args.extend(["-o", merged.to_str().unwrap()]);
    let o = lancet(dir.path(), None, &args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(keys(&merged), keys(&full));
    assert_eq!(
        untimed(read_json(&merged.join("report.json"))),
        untimed(read_json(&full.join("report.json")))
    );
    assert!(merged.join("report.html").is_file());
    // A symlink planted at a report's path is replaced, never written through.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::remove_file(merged.join("report.html")).unwrap();
    std::os::unix::fs::symlink(&victim, merged.join("report.html")).unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("best format per model"));
    // Rebuilding again adds nothing to the merged results.
    let before = std::fs::read_to_string(merged.join("results.jsonl")).unwrap();
    let o = lancet(dir.path(), None, &args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        std::fs::read_to_string(merged.join("results.jsonl")).unwrap(),
        before
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(!merged.join("report.html").is_symlink());
    // Nothing is left beside the reports.
    let names: Vec<String> = std::fs::read_dir(&merged)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

/// The same job twice with different outcomes is reported (stderr and
/// report.json's `conflicts`), and the first directory's record counts.
#[test]
fn a_conflicting_duplicate_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let rec = |pass: bool| {
        json!({"task": "t1", "source": "s", "model": "m", "format": "udiff", "mode": "tool",
               "pass": pass, "tries": 1, "failure": if pass { Value::Null } else { json!("not_found") },
               "tokens_in": 10, "tokens_out": 5, "cost": null, "ms": 3})
    };
    std::fs::write(a.join("results.jsonl"), format!("{}\n", rec(true))).unwrap();
    std::fs::write(b.join("results.jsonl"), format!("{}\n", rec(false))).unwrap();
    let out = dir.path().join("out");
    let o = lancet(
        dir.path(),
        None,
        &[
            "bench",
            "report",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("t1") && err.contains("first is kept"), "{err}");
    let report = read_json(&out.join("report.json"));
    assert_eq!(report["conflicts"].as_array().unwrap().len(), 1);
    assert_eq!(report["records"], 1);
    assert_eq!(report["summary"]["rows"][0]["passed"], 1);
    // A directory without results is a usage error naming it.
    let o = lancet(
        dir.path(),
        None,
        &["bench", "report", dir.path().join("none").to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("none"));
}

/// Results with a bit of everything: two models, three formats, passes and
/// failures of several kinds, a distinguishable verdict, and one result
/// written to a wrong place.
fn varied_results(dir: &Path) {
    let mut lines = String::new();
    let mut push = |task: usize, model: &str, format: &str, failure: Option<&str>, wrong: bool| {
        let r = json!({"task": format!("t{task:02}"), "source": "tasks", "model": model,
            "format": format, "mode": "tool", "pass": failure.is_none(), "tries": 1,
            "failure": failure, "tokens_in": 1000 + 37 * task as u64, "tokens_out": 90 + task as u64,
            "cost": null, "ms": 12, "turns": 3, "wrong_place": wrong});
        lines.push_str(&format!("{r}\n"));
    };
    for t in 0..12 {
        push(t, "big <model>", "hashline", None, false);
        push(
            t,
            "big <model>",
            "udiff",
            (t >= 4).then_some(if t % 2 == 0 { "parse" } else { "not_found" }),
            false,
        );
        push(
            t,
            "big <model>",
            "whole",
            (t >= 10).then_some("wrong_result"),
            t == 11,
        );
        push(t, "small", "hashline", (t >= 11).then_some("stale"), false);
        push(t, "small", "udiff", (t >= 3).then_some("ambiguous"), false);
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("results.jsonl"), lines).unwrap();
}

/// The values of `attr` on every element of the DOM carrying `marker`.
fn elements<'a>(dom: &'a str, marker: &str) -> Vec<&'a str> {
    dom.match_indices(marker)
        .map(|(i, _)| {
            let start = dom[..i].rfind('<').unwrap();
            let end = i + dom[i..].find('>').unwrap();
            &dom[start..end]
        })
        .collect()
}

fn attr<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let i = element.find(&key)? + key.len();
    Some(&element[i..i + element[i..].find('"')?])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// A number of the DOM, read as report.json's numbers are read (the same
/// text gives the same value).
fn f(element: &str, name: &str) -> f64 {
    let text = attr(element, name).unwrap_or_else(|| panic!("{name} missing in {element}"));
    serde_json::from_str::<Value>(text)
        .unwrap()
        .as_f64()
        .unwrap()
}

/// Runs chromium headless on `page` with `flags`: its stdout and stderr.
/// Chromium must be installed (`.ci/test`, the README's test command, installs it).
fn chromium(page: &Path, profile: &Path, flags: &[&str]) -> (String, String) {
    let mut child = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0"])
        .args(flags)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("chromium could not be started ({e}): run .ci/test (the README's test command), which installs it (apt-get install -y chromium)")
        });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (reader.join().unwrap(), err_reader.join().unwrap())
}

/// report.html in a real browser: it renders with no script error (the
/// page's own error trap stays hidden, its script ran, and the console
/// logged no error), loads nothing, and every number in the DOM equals
/// report.json's: the heatmap's pass rates and Wilson intervals, the
/// verdicts' p-values, the scatter's points, the failure bars and the
/// wrong-place count shown at the top.
#[test]
fn report_html_in_chromium_shows_report_json() {
    if Command::new("chromium").arg("--version").output().is_err() {
        panic!(
            "chromium is not installed: run .ci/test (the README's test command), which installs it (apt-get install -y chromium)"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("res");
    varied_results(&res);
    let o = lancet(
        dir.path(),
        None,
        &["bench", "report", res.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let report = read_json(&res.join("report.json"));
    let (dom, log) = chromium(
        &res.join("report.html"),
        &dir.path().join("profile"),
        &["--dump-dom"],
    );
    assert!(
        dom.contains("data-script=\"ran\""),
        "the script did not run: {log}"
    );
    let errors = elements(&dom, "id=\"script-errors\"");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains(" hidden"), "script errors: {dom}");
    for bad in ["Uncaught", "CONSOLE", "Refused to", "net::ERR"] {
        assert!(!log.contains(bad), "{bad} in chromium's log:\n{log}");
    }
    // Wrong place: the count in the page, prominently first.
    assert_eq!(report["wrong_place"], 1);
    let wrong = elements(&dom, "id=\"wrong-place\"");
    assert_eq!(attr(wrong[0], "data-wrong-place"), Some("1"));
    assert!(wrong[0].contains("class=\"alert\""));
    assert!(dom.find("id=\"wrong-place\"") < dom.find("id=\"heatmap\""));
    // Heatmap: one cell per row of the summary, same numbers.
    let rows = report["summary"]["rows"].as_array().unwrap();
    let cells = elements(&dom, "class=\"cell\" style=");
    assert_eq!(cells.len(), rows.len());
    for row in rows {
        let cell = cells
            .iter()
            .find(|c| {
                unescape(attr(c, "data-model").unwrap()) == row["model"].as_str().unwrap()
                    && attr(c, "data-format") == row["format"].as_str()
            })
            .unwrap_or_else(|| panic!("no cell for {row}"));
        assert_eq!(
            f(cell, "data-pass-rate"),
            row["pass_rate"].as_f64().unwrap()
        );
        assert_eq!(
            f(cell, "data-wilson-lo"),
            row["wilson_95"][0].as_f64().unwrap()
        );
        assert_eq!(
            f(cell, "data-wilson-hi"),
            row["wilson_95"][1].as_f64().unwrap()
        );
        assert_eq!(f(cell, "data-passed"), row["passed"].as_f64().unwrap());
        assert_eq!(f(cell, "data-tasks"), row["tasks"].as_f64().unwrap());
        let tokens = (row["tokens_in"].as_f64().unwrap() + row["tokens_out"].as_f64().unwrap())
            / row["tasks"].as_f64().unwrap();
        let point = elements(&dom, "data-point")
            .into_iter()
            .find(|p| {
                unescape(attr(p, "data-model").unwrap()) == row["model"].as_str().unwrap()
                    && attr(p, "data-format") == row["format"].as_str()
            })
            .unwrap();
        assert_eq!(f(point, "data-tokens-per-task"), tokens);
        assert_eq!(
            f(point, "data-pass-rate"),
            row["pass_rate"].as_f64().unwrap()
        );
    }
    // Verdicts: best, runner-up, p-value, distinguishable.
    let verdicts = report["verdicts"].as_array().unwrap();
    let shown = elements(&dom, "data-verdict");
    assert_eq!(shown.len(), verdicts.len());
    assert!(verdicts.iter().any(|v| v["distinguishable"] == true));
    for (v, el) in verdicts.iter().zip(&shown) {
        assert_eq!(
            unescape(attr(el, "data-model").unwrap()),
            v["model"].as_str().unwrap()
        );
        assert_eq!(attr(el, "data-best"), v["best"].as_str());
        assert_eq!(attr(el, "data-runner-up"), v["runner_up"].as_str());
        assert_eq!(
            f(el, "data-p-value"),
            v["test"]["p_value"].as_f64().unwrap()
        );
        assert_eq!(
            attr(el, "data-distinguishable"),
            Some(if v["distinguishable"] == true {
                "true"
            } else {
                "false"
            })
        );
    }
    // Failure bars: per format and kind, the rows' counts summed.
    let bars = elements(&dom, "data-kind=");
    assert!(!bars.is_empty());
    for bar in &bars {
        let (format, kind) = (
            attr(bar, "data-format").unwrap(),
            attr(bar, "data-kind").unwrap(),
        );
        let want: f64 = rows
            .iter()
            .filter(|r| r["format"] == format)
            .filter_map(|r| r["failures"][kind].as_f64())
            .sum();
        assert_eq!(f(bar, "data-count"), want, "{format} {kind}");
    }
    let total: f64 = bars.iter().map(|b| f(b, "data-count")).sum();
    let failed = rows
        .iter()
        .map(|r| r["tasks"].as_f64().unwrap() - r["passed"].as_f64().unwrap())
        .sum::<f64>();
    assert_eq!(total, failed);
}

/// `--recommend` writes the measured choice into the user's models.toml
/// (made when absent), and `lancet run --edit-format auto` then uses it.
/// search/replace passes the task and whole never edits: one task apart is
/// not distinguishable (p = 1), so the cheaper in tokens, whole, is written
/// (the built-in default for this name is search-replace).
#[test]
fn recommend_round_trips_through_lancet_run() {
    let edit = json!({"path": "calc.py", "old_string": "def add(a, b):\n    return a - b", "new_string": "def add(a, b):\n    return a + b"});
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "read", r#"{"path": "calc.py"}"#),
        Scripted::openai_tool_call("c2", "edit", &edit.to_string()),
        Scripted::openai_text("Fixed."),
        Scripted::openai_text("I would rather not."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = lancet(
        dir.path(),
        Some(&server.openai_base_url()),
        &[
            "bench",
            "-t",
            &data("tasks"),
            "--limit",
            "1",
            "-m",
            "openai:scripted-model",
            "-f",
            "search-replace,whole",
            "-j",
            "1",
            "--recommend",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let models = dir.path().join(".config/lancet/models.toml");
    let text = std::fs::read_to_string(&models).unwrap();
    assert!(text.starts_with("# "), "the header comment: {text}");
    let table: toml::Value = toml::from_str(&text).unwrap();
    let entry = &table["model"][0];
    assert_eq!(entry["pattern"].as_str(), Some("scripted-model"));
    assert_eq!(entry["format"].as_str(), Some("whole"));
    assert_eq!(entry["mode"].as_str(), Some("tool"));
    let reason = entry["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("lancet bench 20") && reason.contains("p = 1.000"),
        "{reason}"
    );
    // A comment of the user's survives a second recommendation.
    std::fs::write(&models, format!("{text}# mine, keep me\n")).unwrap();

    let run_server = LlmServer::start(vec![Scripted::openai_text("Nothing to do.")]);
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = lancet(
        dir.path(),
        Some(&run_server.openai_base_url()),
        &[
            "run",
            "-m",
            "scripted-model",
            "--edit-format",
            "auto",
            "--json",
            "-y",
            "-C",
            work.to_str().unwrap(),
            "say hello",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let session: Value = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "session")
        .unwrap();
    assert_eq!(session["format"], "whole", "{session}");
    // The tool the model was offered is the whole-file format's.
    let tools = run_server.requests()[0].body["tools"].to_string();
    assert!(tools.contains("edit"), "{tools}");

    // Recommending again updates the same entry in place (search/replace,
    // now the only format measured); the user's comment stays.
    let again = |script: Vec<Scripted>, out: &str| {
        let server = LlmServer::start(script);
        let o = lancet(
            dir.path(),
            Some(&server.openai_base_url()),
            &[
                "bench",
                "-t",
                &data("tasks"),
                "--limit",
                "1",
                "-m",
                "openai:scripted-model",
                "-f",
                "search-replace",
                "-j",
                "1",
                "--recommend",
                "-o",
                dir.path().join(out).to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        (o, std::fs::read_to_string(&models).unwrap())
    };
    let (_, text) = again(
        vec![
            Scripted::openai_tool_call("c1", "read", r#"{"path": "calc.py"}"#),
            Scripted::openai_tool_call("c2", "edit", &edit.to_string()),
            Scripted::openai_text("Fixed."),
        ],
        "out2",
    );
    assert!(text.contains("# mine, keep me"), "{text}");
    assert_eq!(text.matches("[[model]]").count(), 1, "{text}");
    let table: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(table["model"][0]["format"].as_str(), Some("search-replace"));
    assert!(
        table["model"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("only search-replace")
    );
    // A model that passed nothing is evidence for no format: the file is
    // left as it is, and stderr says why.
    let (o, unchanged) = again(vec![Scripted::openai_text("I would rather not.")], "out3");
    assert_eq!(unchanged, text);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("passed no task"),
        "{}",
        show(&o)
    );
}
