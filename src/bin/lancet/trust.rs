//! What `lancet run` reads from a project, and whether the user trusts it.
//!
//! A project's `.lancet.toml` and `AGENTS.md` are read like any file a tool
//! reads, and more strictly: only a regular file whose real path is inside
//! the root, opened without following a last symlink and without blocking (a
//! FIFO is refused, never waited on), at most a fixed size. A refusal is a
//! one-line note; the file's content is never shown.
//!
//! Trust is the user's word, kept in the user's configuration file as
//! `[[trusted]]` entries: the project's canonical root and the SHA-256 of the
//! `.lancet.toml` the user trusted. Changed content (a `git pull`, a command
//! the model ran) is untrusted again until the user says so once more
//! (`--trust`, or `y` when asked on a terminal). The entry is appended to the
//! user's file, which is replaced atomically with mode 0600 (through a
//! symlink to the real file, for dotfile managers).
//!
//! Owns: those reads, the hash, the question and the user file's update.
//! Does not own: what an untrusted project may set
//! (`lancet::agent::config::Layer::untrusted_project`).

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};

use lancet::agent::config::Trusted;

/// The most of `.lancet.toml` that is read.
pub(crate) const CONFIG_CAP: u64 = 64 * 1024;
/// The most of `AGENTS.md` that is read.
pub(crate) const AGENTS_CAP: u64 = 256 * 1024;

/// Why a project file was not read.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Its real path is outside the root (a symlink leading out).
    Outside,
    /// It is not a regular file (a FIFO, a device, a directory, a socket).
    NotRegular,
    /// It is larger than the cap.
    TooLarge {
        /// The cap, in bytes.
        cap: u64,
    },
    /// It is not UTF-8 text.
    NotText,
    /// Reading it failed.
    Io(io::Error),
}

/// A project file that was not read, as the one-line note says it.
#[derive(Debug)]
pub(crate) struct Refused<'a> {
    /// The file's name in the root.
    pub(crate) name: &'a str,
    /// Why.
    pub(crate) why: Refusal,
}

impl fmt::Display for Refused<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name;
        match &self.why {
            Refusal::Outside => write!(f, "{name} is not read: it leads outside the project root"),
            Refusal::NotRegular => write!(f, "{name} is not read: it is not a regular file"),
            Refusal::TooLarge { cap } => {
                write!(
                    f,
                    "{name} is not read: it is larger than {} KiB",
                    cap / 1024
                )
            }
            Refusal::NotText => write!(f, "{name} is not read: it is not UTF-8 text"),
            Refusal::Io(e) => write!(f, "{name} is not read: {e}"),
        }
    }
}

/// The text of `name` in `root` (canonical), `Ok(None)` when there is none.
pub(crate) fn project_file<'a>(
    root: &Path,
    name: &'a str,
    cap: u64,
) -> Result<Option<String>, Refused<'a>> {
    let refused = |why| Refused { name, why };
    // Usually there is no such file: one `lstat` says so, where
    // canonicalising first costs a `readlink` per name of the root's path.
    match fs::symlink_metadata(root.join(name)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let real = match fs::canonicalize(root.join(name)) {
        Ok(real) => real,
        // Absent, or a dangling link: there is nothing to read.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refused(Refusal::Io(e))),
    };
    if !real.starts_with(root) || real == root {
        return Err(refused(Refusal::Outside));
    }
    let file = open_no_follow(&real).map_err(|e| refused(Refusal::Io(e)))?;
    // The handle's own type and size: what was opened, not what a path
    // names by now.
    let meta = file.metadata().map_err(|e| refused(Refusal::Io(e)))?;
    if !meta.is_file() {
        return Err(refused(Refusal::NotRegular));
    }
    if meta.len() > cap {
        return Err(refused(Refusal::TooLarge { cap }));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refused(Refusal::Io(e)))?;
    if bytes.len() as u64 > cap {
        // It grew since the check.
        return Err(refused(Refusal::TooLarge { cap }));
    }
    String::from_utf8(bytes)
        .map_err(|_| refused(Refusal::NotText))
        .map(Some)
}

/// Opens `path` for reading without following a final symlink (one swapped
/// in since the path was resolved) and without blocking on a FIFO.
#[cfg(unix)]
fn open_no_follow(path: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags, open};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    Ok(File::from(open(path, flags, Mode::empty())?))
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// The user's configuration file: `$XDG_CONFIG_HOME/lancet/config.toml`, else
/// `$HOME/.config/lancet/config.toml` (a relative or empty XDG_CONFIG_HOME is
/// ignored, as the XDG spec says).
pub(crate) fn user_config() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_CONFIG_HOME")
        .or_else(|| absolute("HOME").map(|h| h.join(".config")))
        .map(|d| d.join("lancet").join("config.toml"))
}

/// The user's models.toml, next to the user's configuration file: read by
/// `lancet run` before the built-in table, written by `bench --recommend`.
pub(crate) fn user_models() -> Option<PathBuf> {
    user_config().map(|c| c.with_file_name("models.toml"))
}

/// The SHA-256 of a `.lancet.toml`, in lowercase hex.
pub(crate) fn digest(text: &str) -> String {
    let hash = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    hash.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the user trusts the project at `root` with this `.lancet.toml`.
pub(crate) fn is_trusted(entries: &[Trusted], root: &Path, sha256: &str) -> bool {
    root.to_str()
        .is_some_and(|root| entries.iter().any(|t| t.root == root && t.sha256 == sha256))
}

/// Asks on the terminal whether to trust the project's `.lancet.toml`,
/// showing the keys it sets that only a trusted project may. Default: no.
pub(crate) fn ask(file: &Path, keys: &[&str]) -> bool {
    let mut err = io::stderr();
    let _ = writeln!(
        err,
        "{} sets {}, which only a trusted project may set.",
        file.display(),
        keys.join(", ")
    );
    let _ = write!(err, "Trust this project's .lancet.toml? [y/N] ");
    let _ = err.flush();
    let mut line = String::new();
    matches!(io::stdin().lock().read_line(&mut line), Ok(n) if n > 0)
        && matches!(line.trim(), "y" | "Y" | "yes")
}

/// Records in the user's configuration file `path` that the project at
/// `root` is trusted with the `.lancet.toml` whose hash is `sha256`: the
/// entry is appended (the user's own text and comments are kept) and the
/// file replaced atomically, mode 0600.
pub(crate) fn remember(path: &Path, root: &Path, sha256: &str) -> io::Result<()> {
    let root = root.to_str().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the project's path is not UTF-8",
        )
    })?;
    // Through a symlink (a dotfile manager's) to the real file.
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no directory"))?;
    create_private_dir(dir)?;
    let mut text = match fs::read_to_string(&target) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&format!(
        "# Trusted by `lancet run` (its .lancet.toml as it was then).\n[[trusted]]\nroot = {}\nsha256 = {}\n",
        toml::Value::String(root.to_owned()),
        toml::Value::String(sha256.to_owned()),
    ));
    let temp = dir.join(format!(
        ".config.toml.{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    ));
    let written = write_private(&temp, text.as_bytes()).and_then(|()| fs::rename(&temp, &target));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Creates `bytes` at `path` (which must not exist) with mode 0600, synced.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Creates `dir` and its parents, the new ones private to the user.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}
