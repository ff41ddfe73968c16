//! `lancet apply`'s configuration: the one key it reads, `undo`, from the
//! user's file and the project's `.lancet.toml` as far as the user trusts it.
//!
//! Owns: reading and layering those two files for `apply`, cheaply (a file
//! that is absent costs one failed open; nothing is parsed unless it exists).
//! Does not own: parsing and what an untrusted project may set
//! (`lancet::agent::config`), finding the files and trust records (`trust`).
//! `apply` never asks: an untrusted `.lancet.toml` may only narrow, so it can
//! turn the journal on, never off (`lancet run --trust` trusts a file).
//! Invariant: the journal is off only if the user's own file, a trusted
//! project's file, or the `--no-undo` flag says so.

use std::path::Path;

use lancet::agent::config::{self, Layer};

use crate::error::Error;
use crate::{style, trust};

/// A one-line note on stderr.
fn note(text: &str) {
    anstream::eprintln!(
        "{}",
        style::paint(style::NOTICE, &format!("lancet: note: {text}"))
    );
}

/// Whether the configuration turns `lancet apply`'s undo journal off for the
/// project at `root` (canonical): `undo = false` in the user's file, or in a
/// `.lancet.toml` the user trusts, and no `undo = true` above it.
pub(crate) fn journal_off(root: &Path) -> Result<bool, Error> {
    let mut layer = config::defaults();
    let mut trusted = Vec::new();
    if let Some(path) = trust::user_config() {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let mut user =
                    Layer::parse(&text, &path.display().to_string()).map_err(Error::Config)?;
                trusted = std::mem::take(&mut user.trusted);
                layer = layer.merged(user);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => note(&format!("{} is not read: {e}", path.display())),
        }
    }
    let file = root.join(".lancet.toml");
    match trust::project_file(root, ".lancet.toml", trust::CONFIG_CAP) {
        Ok(Some(text)) => {
            let project =
                Layer::parse(&text, &file.display().to_string()).map_err(Error::Config)?;
            let chosen = if trust::is_trusted(&trusted, root, &trust::digest(&text)) {
                project.trusted_project()
            } else {
                project.untrusted_project(&layer)
            };
            if chosen.ignored.contains(&"undo") {
                note(&format!(
                    "`undo = false` in {} is ignored: it is not trusted, and only a trusted project may turn the undo journal off",
                    file.display()
                ));
            }
            layer = layer.merged(chosen.layer);
        }
        Ok(None) => {}
        Err(refused) => note(&refused.to_string()),
    }
    Ok(layer.undo == Some(false))
}
