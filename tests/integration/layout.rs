//! Repository rules, enforced as ordinary tests.

use std::path::Path;

/// Every `.rs` file in `tests/integration/` is declared in `main.rs`; a test
/// file that is not wired in would silently never run.
#[test]
fn every_test_module_is_wired_in() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        if module == "main" {
            continue;
        }
        assert!(
            main.contains(&format!("mod {module};")),
            "tests/integration/{name} is not declared in main.rs"
        );
    }
}

/// Every source file opens with a `//!` paragraph saying what it owns.
#[test]
fn every_source_file_opens_with_module_docs() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.starts_with("//!"),
            "{} does not open with a //! paragraph",
            f.display()
        );
    }
}

/// Every fixture case folder is well-formed: an edit, and expectations.
#[test]
fn fixture_cases_are_well_formed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for format in std::fs::read_dir(&root).unwrap() {
        let format = format.unwrap().path();
        if !format.is_dir() {
            continue;
        }
        for kind in ["ok", "err"] {
            let Ok(cases) = std::fs::read_dir(format.join(kind)) else {
                continue;
            };
            for case in cases {
                let case = case.unwrap().path();
                let name = case.file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    name.len() > 4
                        && name[..3].chars().all(|c| c.is_ascii_digit())
                        && &name[3..4] == "_",
                    "{}: case folders are named NNN_name",
                    case.display()
                );
                assert!(
                    case.join("edit.txt").exists() || case.join("edit.json").exists(),
                    "{}: needs edit.txt or edit.json",
                    case.display()
                );
                if kind == "ok" {
                    assert!(
                        case.join("expected").is_dir() || case.join("expect.toml").exists(),
                        "{}: ok cases need expected/",
                        case.display()
                    );
                } else {
                    assert!(
                        case.join("expect.toml").exists(),
                        "{}: err cases need expect.toml",
                        case.display()
                    );
                }
            }
        }
    }
}

/// The engine's layers, lowest first. A module may use modules of its own
/// layer or below, never above: scan (byte searches) → text → matcher → splice/edit → report →
/// feedback → format/syntax → apply. Data sits low (the text model, the
/// report), words above the data they describe (feedback reads reports and
/// never a format), and the pipeline on top; the workspace (the disk) is a
/// leaf the pipeline uses. `lib.rs`, the agent and the binary are outside the
/// layering.
const LAYERS: &[&[&str]] = &[
    &["scan"],
    &["text", "workspace"],
    &["matcher"],
    &["splice", "edit"],
    &["report"],
    &["feedback"],
    &["format", "syntax"],
    &["apply"],
];

/// The crate's modules that `crate::NAME` can name, in or out of the layering.
const OTHER_MODULES: &[&str] = &["agent", "invariants"];

/// `use crate::…` and inline `crate::…` paths of `code`, as the first segment
/// of each path (`crate::{a::X, b}` gives `a` and `b`).
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        // `$crate::` and identifiers ending in `crate` are not paths of this crate.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // A brace group: split its top level at commas.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(item);
        } else {
            out.push(rest.to_owned());
        }
    }
    out.into_iter()
        .map(|p| {
            p.trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// A source file without its unit tests and comments: what the rule is about.
fn code_of(text: &str) -> String {
    let text = text
        .split("\n#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(text);
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Root re-exports (`pub use module::{A, B};` in lib.rs): name → module.
fn root_exports(lib: &str) -> std::collections::HashMap<String, String> {
    let mut map = std::collections::HashMap::new();
    for stmt in code_of(lib).split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap_or(name).trim();
            if !name.is_empty() {
                map.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    map
}

/// Repository rule: imports among the engine's modules run one way (see
/// [`LAYERS`]); a lower layer never imports a higher one, and no modules import
/// each other. `crate::NAME` through a root re-export counts as an import of
/// the module that defines it.
#[test]
fn engine_imports_run_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let exports = root_exports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    // Every module of the layering, with the files that make it up.
    let mut files: Vec<(&str, std::path::PathBuf)> = Vec::new();
    for layer in LAYERS {
        for &m in *layer {
            let single = src.join(format!("{m}.rs"));
            if single.exists() {
                files.push((m, single));
            }
            if let Ok(dir) = std::fs::read_dir(src.join(m)) {
                for f in dir {
                    let p = f.unwrap().path();
                    if p.extension().is_some_and(|e| e == "rs") {
                        files.push((m, p));
                    }
                }
            }
        }
    }
    let mut problems = Vec::new();
    let mut edges: Vec<(&str, String)> = Vec::new();
    for (m, path) in &files {
        let code = code_of(&std::fs::read_to_string(path).unwrap());
        for first in crate_paths(&code) {
            let target = if layer_of(&first).is_some() || OTHER_MODULES.contains(&first.as_str()) {
                first.clone()
            } else if let Some(module) = exports.get(&first) {
                module.clone()
            } else {
                problems.push(format!(
                    "{}: `crate::{first}` is neither a module nor a root re-export this test knows",
                    path.display()
                ));
                continue;
            };
            if target == *m {
                continue;
            }
            match (layer_of(m), layer_of(&target)) {
                (Some(from), Some(to)) if to > from => problems.push(format!(
                    "{}: `{m}` imports `{target}`, a higher layer (via `crate::{first}`)",
                    path.display()
                )),
                (_, None) => problems.push(format!(
                    "{}: `{m}` imports `{target}`, which is outside the engine's layers",
                    path.display()
                )),
                _ => edges.push((m, target)),
            }
        }
    }
    // Modules of one layer may use each other, but not both ways round (a cycle).
    for (a, b) in &edges {
        if edges.iter().any(|(c, d)| c == b && d == a) {
            problems.push(format!("`{a}` and `{b}` import each other"));
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The rule's parser finds what it must: grouped, nested and inline paths,
/// and not `$crate` or text in comments.
#[test]
fn crate_paths_are_parsed() {
    let code = code_of(
        "use crate::{a::X, b::{Y, Z}, c};\nuse crate::d::W;\nfn f() { crate::e::g(); }\n// crate::h\n$crate::i\n",
    );
    assert_eq!(crate_paths(&code), ["a", "b", "c", "d", "e"]);
}

/// Every format has its documents and fixtures, found by its prompt:
/// `edit-formats/<doc>.prompt.md` is what `Format::instructions` returns,
/// and next to it are the spec (`<doc>.md`) and the agent's edit tool
/// (`<doc>.tool.json`, what `Format::tool_spec` returns); its cases are in
/// `tests/fixtures/<doc>/`. Every prompt belongs to a format, so a format
/// whose definition is not in `Format::ALL` is caught too.
#[test]
fn every_format_has_its_spec_prompt_tool_and_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = root.join("edit-formats");
    let mut prompts: Vec<(String, String)> = std::fs::read_dir(&docs)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let stem = name.strip_suffix(".prompt.md")?.to_owned();
            let text = std::fs::read_to_string(docs.join(&name)).unwrap();
            Some((stem, text))
        })
        .collect();
    let mut problems = Vec::new();
    for &format in lancet::Format::ALL {
        let Some(at) = prompts.iter().position(|(_, t)| t == format.instructions()) else {
            problems.push(format!(
                "{}: no edit-formats/*.prompt.md holds its instructions",
                format.name()
            ));
            continue;
        };
        let (doc, _) = prompts.swap_remove(at);
        if !docs.join(format!("{doc}.md")).is_file() {
            problems.push(format!("{}: no spec edit-formats/{doc}.md", format.name()));
        }
        match std::fs::read_to_string(docs.join(format!("{doc}.tool.json"))) {
            Ok(tool) if tool == format.tool_spec() => {
                let spec: serde_json::Value = serde_json::from_str(&tool).unwrap_or_default();
                if !spec["description"].is_string() || !spec["parameters"].is_object() {
                    problems.push(format!(
                        "{}: edit-formats/{doc}.tool.json needs a description and parameters",
                        format.name()
                    ));
                }
            }
            Ok(_) => problems.push(format!(
                "{}: edit-formats/{doc}.tool.json is not its tool_spec",
                format.name()
            )),
            Err(_) => problems.push(format!(
                "{}: no edit tool edit-formats/{doc}.tool.json",
                format.name()
            )),
        }
        let fixtures = root.join("tests/fixtures").join(&doc);
        let cases = ["ok", "err"]
            .iter()
            .filter_map(|k| std::fs::read_dir(fixtures.join(k)).ok())
            .flatten()
            .count();
        if cases == 0 {
            problems.push(format!(
                "{}: no fixture cases in tests/fixtures/{doc}/{{ok,err}}/",
                format.name()
            ));
        }
    }
    for (doc, _) in prompts {
        problems.push(format!(
            "edit-formats/{doc}.prompt.md belongs to no format in Format::ALL"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
