//! `report.html`: the report for a person, one self-contained file — inline
//! CSS and SVG, no network (a Content-Security-Policy forbids every fetch),
//! no external script — with a pass-rate heatmap model × format (Wilson
//! intervals), tokens against pass rate, failure kinds per format, the
//! paired tests' verdicts, and the results written to a wrong place at the
//! top when there are any.
//!
//! Every number shown carries `data-*` attributes with the exact value from
//! the [`Report`] (serde_json's shortest round-trip form), so a test reads
//! the DOM and compares it with report.json. The page reads fine without
//! its one inline script (which sorts the detail table on a click, and
//! writes any script error into the page).
//!
//! Owns: markup and layout. Does not own: the words (`words::ReportText` and
//! friends) or the figures (`report`).
//!
//! Invariant: every text from the results (model names, task ids, reasons)
//! is HTML-escaped; the page loads nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::report::Report;
use super::{FailureKind, Mode};
use crate::agent::words::{self, ReportText as T};

/// Escapes text for HTML content and double-quoted attributes.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number as report.json writes it.
fn num(x: f64) -> String {
    serde_json::Value::from(x).to_string()
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A kind's colour in the bars and legend (fixed, so reports compare).
fn colour(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Parse => "#d62728",
        FailureKind::NotFound => "#ff7f0e",
        FailureKind::Ambiguous => "#bcbd22",
        FailureKind::Stale => "#9467bd",
        FailureKind::Syntax => "#8c564b",
        FailureKind::WrongResult => "#e377c2",
        FailureKind::NoEdit => "#7f7f7f",
        FailureKind::Provider => "#17becf",
        FailureKind::Timeout => "#1f77b4",
        FailureKind::CheckFailed => "#2ca02c",
    }
}

/// A heatmap cell's background: red (0 %) through yellow to green (100 %).
fn heat(rate: f64) -> String {
    format!("hsl({:.0}, 70%, 80%)", rate.clamp(0.0, 1.0) * 120.0)
}

const STYLE: &str = "
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}
p.note{color:#555;max-width:50em}
table{border-collapse:collapse;margin:.5em 0}
th,td{padding:.3em .6em;border:1px solid #ddd;text-align:left;vertical-align:top}
th{background:#f5f5f5}
td.cell{text-align:center;min-width:7em}
td.cell b{font-size:1.15em;display:block}
td.cell small,small{color:#444}
.alert{background:#fde2e1;border:2px solid #c0392b;padding:1em;font-size:1.1em}
.alert b{font-size:1.6em;color:#c0392b}
.ok{background:#e6f4e6;border:1px solid #8bc48b;padding:.5em 1em}
.warn{background:#fff4d6;border:1px solid #e0b84c;padding:.5em 1em}
.legend span{display:inline-block;margin-right:1.2em}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}
.yes{color:#1e7e34;font-weight:bold}.no{color:#666}
th.sort{cursor:pointer}
#script-errors{color:#c0392b}
svg text{font:12px system-ui,sans-serif;fill:#333}
";

/// Sorts the detail table by a clicked column, and writes any script error
/// into the page (a headless browser's DOM shows it).
const SCRIPT: &str = "
window.addEventListener('error', function (e) {
  var p = document.getElementById('script-errors');
  p.hidden = false;
  p.textContent += (e.message || String(e)) + '\\n';
});
(function () {
  var table = document.getElementById('details');
  if (!table) { return; }
  var heads = table.querySelectorAll('th');
  heads.forEach(function (th, col) {
    th.classList.add('sort');
    th.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute('data-down') !== '1';
      th.setAttribute('data-down', down ? '1' : '0');
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute('data-sort') || a.cells[col].textContent;
        var y = b.cells[col].getAttribute('data-sort') || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  document.body.setAttribute('data-script', 'ran');
})();
";

/// The page for `report`.
pub fn render(report: &Report) -> String {
    let rows = &report.summary.rows;
    let models: BTreeSet<(&str, Mode)> = rows.iter().map(|r| (r.model.as_str(), r.mode)).collect();
    let mut formats: Vec<&str> = Vec::new();
    for f in crate::Format::ALL {
        if rows.iter().any(|r| r.format == f.name()) {
            formats.push(f.name());
        }
    }
    for r in rows {
        if !formats.contains(&r.format.as_str()) {
            formats.push(&r.format);
        }
    }
    let model_names: BTreeSet<&str> = models.iter().map(|(m, _)| *m).collect();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body data-records=\"{}\" data-wrong-place=\"{}\">\n",
        esc(T::Title.text()),
        report.records,
        report.wrong_place
    );
    let _ = writeln!(h, "<h1>{}</h1>", esc(T::Title.text()));
    let _ = writeln!(
        h,
        "<pre id=\"script-errors\" hidden>{}\n</pre>",
        esc(T::ScriptFailed.text())
    );
    let _ = writeln!(
        h,
        "<p>{}</p>\n<p><b>{}</b></p>",
        esc(T::Intro.text()),
        esc(&words::bench_html_counts(
            report.records,
            model_names.len(),
            formats.len()
        ))
    );
    if report.interrupted {
        let _ = writeln!(h, "<p class=\"warn\">{}</p>", esc(T::Interrupted.text()));
    }
    if report.wrong_place > 0 {
        let _ = writeln!(
            h,
            "<div id=\"wrong-place\" class=\"alert\" data-wrong-place=\"{n}\">{}</div>",
            esc(&words::bench_html_wrong_place(report.wrong_place)),
            n = report.wrong_place
        );
    } else {
        let _ = writeln!(
            h,
            "<p id=\"wrong-place\" class=\"ok\" data-wrong-place=\"0\">{}</p>",
            esc(T::NoWrongPlace.text())
        );
    }
    heatmap(&mut h, report, &models, &formats);
    verdicts(&mut h, report);
    scatter(&mut h, report);
    failures(&mut h, report, &formats);
    details(&mut h, report);
    if !report.summary.skipped.is_empty() {
        let _ = writeln!(h, "<h2>{}</h2>\n<ul>", esc(T::SkippedTitle.text()));
        for s in &report.summary.skipped {
            let _ = writeln!(
                h,
                "<li data-skipped=\"{}\">{} {}: {}</li>",
                esc(&s.task),
                esc(&s.source),
                esc(&s.task),
                esc(&s.reason)
            );
        }
        let _ = writeln!(h, "</ul>");
    }
    if !report.conflicts.is_empty() {
        let _ = writeln!(h, "<h2>{}</h2>\n<ul>", esc(T::ConflictsTitle.text()));
        for c in &report.conflicts {
            let _ = writeln!(
                h,
                "<li data-conflict>{}</li>",
                esc(&words::bench_conflict(c))
            );
        }
        let _ = writeln!(h, "</ul>");
    }
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body></html>\n");
    h
}

fn heatmap(h: &mut String, report: &Report, models: &BTreeSet<(&str, Mode)>, formats: &[&str]) {
    let _ = writeln!(
        h,
        "<h2>{}</h2>\n<p class=\"note\">{}</p>\n<table id=\"heatmap\"><thead><tr><th></th>",
        esc(T::HeatmapTitle.text()),
        esc(T::HeatmapNote.text())
    );
    for f in formats {
        let _ = write!(h, "<th>{}</th>", esc(f));
    }
    let _ = writeln!(h, "</tr></thead><tbody>");
    for (model, mode) in models {
        let _ = write!(
            h,
            "<tr><th>{} <small>({})</small></th>",
            esc(model),
            mode.name()
        );
        for f in formats {
            let row = report
                .summary
                .rows
                .iter()
                .find(|r| r.model == *model && r.mode == *mode && r.format == *f);
            match row {
                None => {
                    let _ = write!(h, "<td class=\"cell\">–</td>");
                }
                Some(r) => {
                    let _ = write!(
                        h,
                        "<td class=\"cell\" style=\"background:{}\" data-model=\"{}\" data-mode=\"{}\" data-format=\"{}\" \
                         data-pass-rate=\"{}\" data-passed=\"{}\" data-tasks=\"{}\" data-wilson-lo=\"{}\" data-wilson-hi=\"{}\">\
                         <b>{}</b><small>{}/{}<br>{}–{}</small></td>",
                        heat(r.pass_rate),
                        esc(model),
                        mode.name(),
                        esc(f),
                        num(r.pass_rate),
                        r.passed,
                        r.tasks,
                        num(r.wilson_95.0),
                        num(r.wilson_95.1),
                        pct(r.pass_rate),
                        r.passed,
                        r.tasks,
                        pct(r.wilson_95.0),
                        pct(r.wilson_95.1)
                    );
                }
            }
        }
        let _ = writeln!(h, "</tr>");
    }
    let _ = writeln!(h, "</tbody></table>");
}

fn verdicts(h: &mut String, report: &Report) {
    let _ = writeln!(
        h,
        "<h2>{}</h2>\n<p class=\"note\">{}</p>\n<table id=\"verdicts\"><thead><tr>\
         <th>model</th><th>mode</th><th>best</th><th>runner-up</th>\
         <th>only best passed</th><th>only runner-up passed</th><th>p</th><th>verdict</th></tr></thead><tbody>",
        esc(T::VerdictTitle.text()),
        esc(T::VerdictNote.text())
    );
    for v in &report.verdicts {
        let (p, a, b) = v
            .test
            .as_ref()
            .map_or((None, 0, 0), |t| (Some(t.p_value), t.only_a, t.only_b));
        let _ = writeln!(
            h,
            "<tr data-verdict data-model=\"{}\" data-mode=\"{}\" data-best=\"{}\" data-runner-up=\"{}\" \
             data-p-value=\"{}\" data-distinguishable=\"{}\">\
             <td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{a}</td><td>{b}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
            esc(&v.model),
            v.mode.name(),
            esc(&v.best),
            esc(v.runner_up.as_deref().unwrap_or("")),
            p.map(num).unwrap_or_default(),
            v.distinguishable,
            esc(&v.model),
            v.mode.name(),
            esc(&v.best),
            pct(v.best_pass_rate),
            match (&v.runner_up, v.runner_up_pass_rate) {
                (Some(f), Some(r)) => format!("{} {}", esc(f), pct(r)),
                _ => "–".to_owned(),
            },
            p.map_or_else(|| "–".to_owned(), |p| format!("{p:.3}")),
            if v.distinguishable { "yes" } else { "no" },
            esc(&words::bench_verdict(v))
        );
    }
    let _ = writeln!(h, "</tbody></table>");
}

fn scatter(h: &mut String, report: &Report) {
    let rows = &report.summary.rows;
    let tokens = |r: &super::Row| (r.tokens_in + r.tokens_out) as f64 / r.tasks.max(1) as f64;
    let max_x = rows.iter().map(tokens).fold(0.0_f64, f64::max).max(1.0);
    let (w, ht, left, bottom, top, right) = (720.0, 360.0, 60.0, 40.0, 15.0, 200.0);
    let pw = w - left - right;
    let ph = ht - top - bottom;
    let _ = writeln!(
        h,
        "<h2>{}</h2>\n<p class=\"note\">{}</p>\n\
         <svg id=\"scatter\" width=\"{w}\" height=\"{ht}\" viewBox=\"0 0 {w} {ht}\" role=\"img\" aria-label=\"{}\">",
        esc(T::ScatterTitle.text()),
        esc(T::ScatterNote.text()),
        esc(T::ScatterTitle.text())
    );
    // Axes, with ticks at 0, 25, 50, 75, 100 % and five token marks.
    let _ = writeln!(
        h,
        "<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"#888\"/>\
         <line x1=\"{left}\" y1=\"{0}\" x2=\"{}\" y2=\"{0}\" stroke=\"#888\"/>",
        top + ph,
        left + pw
    );
    for i in 0..=4 {
        let f = f64::from(i) / 4.0;
        let y = top + ph * (1.0 - f);
        let x = left + pw * f;
        let _ = writeln!(
            h,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}%</text>\
             <line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{:.0}</text>",
            left - 6.0,
            y + 4.0,
            f * 100.0,
            left + pw,
            top + ph + 16.0,
            max_x * f
        );
    }
    let _ = writeln!(
        h,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">tokens per task</text>\
         <text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">pass rate</text>",
        left + pw / 2.0,
        ht - 4.0,
        top + ph / 2.0,
        top + ph / 2.0
    );
    for (i, r) in rows.iter().enumerate() {
        let t = tokens(r);
        let x = left + pw * t / max_x;
        let y = top + ph * (1.0 - r.pass_rate);
        let label = format!("{} · {} ({})", r.model, r.format, r.mode.name());
        let _ = writeln!(
            h,
            "<g><circle data-point data-model=\"{}\" data-format=\"{}\" data-mode=\"{}\" data-tokens-per-task=\"{}\" \
             data-pass-rate=\"{}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"hsl({}, 60%, 45%)\"><title>{}: {}, {:.0} tokens/task</title></circle>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            esc(&r.model),
            esc(&r.format),
            r.mode.name(),
            num(t),
            num(r.pass_rate),
            (i * 67) % 360,
            esc(&label),
            pct(r.pass_rate),
            t,
            x + 8.0,
            y + 4.0,
            esc(&label)
        );
    }
    let _ = writeln!(h, "</svg>");
}

fn failures(h: &mut String, report: &Report, formats: &[&str]) {
    let mut by_format: BTreeMap<&str, BTreeMap<FailureKind, u64>> = BTreeMap::new();
    let mut jobs: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &report.summary.rows {
        *jobs.entry(&r.format).or_default() += r.tasks;
        let e = by_format.entry(&r.format).or_default();
        for (k, n) in &r.failures {
            *e.entry(*k).or_default() += n;
        }
    }
    let most = jobs.values().copied().max().unwrap_or(1).max(1) as f64;
    let (left, width, bar, gap) = (130.0, 520.0, 22.0, 10.0);
    let height = (bar + gap) * formats.len() as f64 + 10.0;
    let _ = writeln!(
        h,
        "<h2>{}</h2>\n<p class=\"note\">{}</p>\n<p class=\"legend\">",
        esc(T::FailuresTitle.text()),
        esc(T::FailuresNote.text())
    );
    for k in FailureKind::ALL {
        let _ = write!(
            h,
            "<span><i style=\"background:{}\"></i>{}: {}</span>",
            colour(*k),
            k.name(),
            esc(words::bench_kind_meaning(*k))
        );
    }
    let _ = writeln!(
        h,
        "</p>\n<svg id=\"failures\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\" role=\"img\" aria-label=\"{}\">",
        left + width + 160.0,
        left + width + 160.0,
        esc(T::FailuresTitle.text())
    );
    for (i, f) in formats.iter().enumerate() {
        let y = i as f64 * (bar + gap) + 5.0;
        let total = jobs.get(f).copied().unwrap_or(0);
        let failed: u64 = by_format.get(f).map_or(0, |m| m.values().sum());
        let _ = writeln!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + bar * 0.7,
            esc(f)
        );
        let mut x = left;
        for (k, n) in by_format.get(f).into_iter().flatten() {
            let wseg = width * *n as f64 / most;
            let _ = writeln!(
                h,
                "<rect data-format=\"{}\" data-kind=\"{}\" data-count=\"{n}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{wseg:.1}\" height=\"{bar}\" fill=\"{}\"><title>{}: {n} {}</title></rect>",
                esc(f),
                k.name(),
                colour(*k),
                esc(f),
                k.name()
            );
            x += wseg;
        }
        let _ = writeln!(
            h,
            "<text data-format=\"{}\" data-failed=\"{failed}\" data-jobs=\"{total}\" x=\"{:.1}\" y=\"{:.1}\">{failed} of {total} failed</text>",
            esc(f),
            x + 6.0,
            y + bar * 0.7
        );
    }
    let _ = writeln!(h, "</svg>");
}

fn details(h: &mut String, report: &Report) {
    let _ = writeln!(
        h,
        "<h2>{}</h2>\n<table id=\"details\"><thead><tr><th>model</th><th>format</th><th>mode</th>\
         <th>passed</th><th>pass rate</th><th>95% interval</th><th>first try</th><th>mean tries</th>\
         <th>tokens in</th><th>tokens out</th><th>cost $</th><th>median ms</th><th>wrong place</th><th>failures</th></tr></thead><tbody>",
        esc(T::DetailsTitle.text())
    );
    for r in &report.summary.rows {
        let failures: Vec<String> = r
            .failures
            .iter()
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        let _ = writeln!(
            h,
            "<tr data-row data-model=\"{}\" data-format=\"{}\" data-mode=\"{}\" data-tokens-in=\"{}\" data-tokens-out=\"{}\" data-wrong-place=\"{}\" data-mean-tries=\"{}\">\
             <td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td data-sort=\"{}\">{}</td><td>{}–{}</td><td>{}</td><td>{:.2}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td><td>{}</td></tr>",
            esc(&r.model),
            esc(&r.format),
            r.mode.name(),
            r.tokens_in,
            r.tokens_out,
            r.wrong_place,
            num(r.mean_tries),
            esc(&r.model),
            esc(&r.format),
            r.mode.name(),
            r.passed,
            r.tasks,
            num(r.pass_rate),
            pct(r.pass_rate),
            pct(r.wilson_95.0),
            pct(r.wilson_95.1),
            r.passed_first_try,
            r.mean_tries,
            r.tokens_in,
            r.tokens_out,
            r.cost.map_or_else(|| "–".to_owned(), |c| format!("{c:.4}")),
            r.median_ms,
            if r.wrong_place > 0 {
                " class=\"alert\""
            } else {
                ""
            },
            r.wrong_place,
            if failures.is_empty() {
                "–".to_owned()
            } else {
                esc(&failures.join(", "))
            }
        );
    }
    let _ = writeln!(h, "</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::super::{Record, Skipped};
    use super::*;

    fn rec(task: &str, model: &str, format: &str, pass: bool, wrong_place: bool) -> Record {
        Record {
            task: task.into(),
            source: "s".into(),
            model: model.into(),
            format: format.into(),
            mode: Mode::Tool,
            pass,
            tries: 1,
            failure: (!pass).then_some(FailureKind::WrongResult),
            tokens_in: 100,
            tokens_out: 7,
            cost: None,
            ms: 1,
            turns: 2,
            detail: None,
            wrong_place,
            tier: None,
            ending: None,
        }
    }

    #[test]
    fn names_are_escaped_and_nothing_is_loaded() {
        let records = vec![
            rec("t1", "<script>alert(1)</script>", "udiff", true, false),
            rec("t2", "<script>alert(1)</script>", "udiff", false, true),
        ];
        let skipped = [Skipped {
            source: "s".into(),
            id: "x\"y".into(),
            reason: "<b>".into(),
        }];
        let page = render(&Report::of(&records, &skipped, false, Vec::new()));
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("x&quot;y"));
        assert_eq!(page.matches("<script").count(), 1, "one inline script");
        for remote in ["src=", "href=", "http://", "https://", "@import", "url("] {
            assert!(!page.contains(remote), "{remote} in the page");
        }
        assert!(page.contains("id=\"wrong-place\" class=\"alert\" data-wrong-place=\"1\""));
    }
}
