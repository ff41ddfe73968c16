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
