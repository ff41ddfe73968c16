//! Every input a fuzzer once crashed on, replayed through its check: each file
//! under `tests/fuzz-regressions/<target>/` (see the README there).

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| check(&data));
        assert!(result.is_ok(), "{} panics again", path.display());
    }
}

#[test]
fn fuzz_regressions_stay_fixed() {
    replay(
        "search_replace_parse",
        lancet::invariants::search_replace_parse,
    );
    replay("cascade", lancet::invariants::cascade);
    replay("udiff_parse", lancet::invariants::udiff_parse);
    replay("udiff_round_trip", lancet::invariants::udiff_round_trip);
    replay(
        "anchor_and_patch_parse",
        lancet::invariants::anchor_and_patch_parse,
    );
}
