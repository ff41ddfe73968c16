//! `lancet apply`'s configuration: the keys it reads, `undo` and `fsync`,
//! from the user's file and the project's `.lancet.toml` as far as the user
//! trusts it.
//!
//! Owns: reading those two files (`read`, which `lancet run` layers too:
//! one reader, the project's file only through `trust::project_file`), and
//! layering them for `apply`, cheaply (a file that is absent costs one
//! failed open; nothing is parsed unless it exists).
//! Does not own: parsing and what an untrusted project may set
//! (`lancet::agent::config`), finding the files and trust records (`trust`).
//! `apply` never asks: an untrusted `.lancet.toml` may only narrow, so it can
//! turn the journal on, never off (`lancet run --trust` trusts a file).
//! Invariant: the journal is off only if the user's own file, a trusted
//! project's file, or the `--no-undo` flag says so; files are flushed when
//! any file read says `fsync = true` and none the user trusts more says false.

use std::path::{Path, PathBuf};

use lancet::agent::config::{self, Layer, Trusted};

use crate::error::Error;
use crate::{style, trust};

/// A one-line note on stderr.
pub(crate) fn note(text: &str) {
    anstream::eprintln!(
        "{}",
        style::paint(style::NOTICE, &format!("lancet: note: {text}"))
    );
}

/// The configuration files as read: the defaults with the user's file
/// merged (`check` run on it first), the projects that file trusts, its path,
/// and the project's `.lancet.toml` — its text and layer — when it exists and
/// may be read (through `trust::project_file`: regular, inside the root,
/// bounded). Nothing is layered from the project here: what it may set is the
/// caller's decision.
pub(crate) struct Files {
    pub(crate) layer: Layer,
    pub(crate) trusted: Vec<Trusted>,
    pub(crate) user_file: Option<PathBuf>,
    pub(crate) project: Option<(String, Layer)>,
}

/// Reads the configuration files for the project at `root` (see [`Files`]).
pub(crate) fn read(
    root: &Path,
    check: impl Fn(&Layer, &Path) -> Result<(), Error>,
) -> Result<Files, Error> {
    let mut layer = config::defaults();
    let mut trusted = Vec::new();
    let user_file = trust::user_config();
    if let Some(path) = &user_file {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let mut user =
                    Layer::parse(&text, &path.display().to_string()).map_err(Error::Config)?;
                check(&user, path)?;
                trusted = std::mem::take(&mut user.trusted);
                layer = layer.merged(user);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => note(&format!("{} is not read: {e}", path.display())),
        }
    }
    let file = root.join(".lancet.toml");
    let project = match trust::project_file(root, ".lancet.toml", trust::CONFIG_CAP) {
        Ok(Some(text)) => {
            let parsed = Layer::parse(&text, &file.display().to_string()).map_err(Error::Config)?;
            Some((text, parsed))
        }
        Ok(None) => None,
        Err(refused) => {
            note(&refused.to_string());
            None
        }
    };
    Ok(Files {
        layer,
        trusted,
        user_file,
        project,
    })
}

/// What the configuration says for `lancet apply` in the project at `root`
/// (canonical).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ApplySettings {
    /// The undo journal is off: `undo = false` in the user's file, or in a
    /// `.lancet.toml` the user trusts, and no `undo = true` above it.
    pub(crate) journal_off: bool,
    /// Written files are flushed to disk first (`fsync = true`; a project's
    /// file may turn it on, and off only where the user has not).
    pub(crate) fsync: bool,
}

/// Reads [`ApplySettings`] for the project at `root` (canonical).
pub(crate) fn apply_settings(root: &Path) -> Result<ApplySettings, Error> {
    let Files {
        mut layer,
        trusted,
        project,
        ..
    } = read(root, |_, _| Ok(()))?;
    if let Some((text, project)) = project {
        let chosen = if trust::is_trusted(&trusted, root, &trust::digest(&text)) {
            project.trusted_project()
        } else {
            project.untrusted_project(&layer)
        };
        if chosen.ignored.contains(&"undo") {
            note(&format!(
                "`undo = false` in {} is ignored: it is not trusted, and only a trusted project may turn the undo journal off",
                root.join(".lancet.toml").display()
            ));
        }
        layer = layer.merged(chosen.layer);
    }
    Ok(ApplySettings {
        journal_off: layer.undo == Some(false),
        fsync: layer.fsync == Some(true),
    })
}
