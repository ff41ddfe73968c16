//! `mutate:DIR[:N]`: bug-fix tasks generated from a source tree. Each task
//! is one seeded mutation of one real Python or Rust file: `before/` holds
//! the mutated file, `after/` the original bytes, and the instruction reads
//! like a bug report (the symptom and the function, never the line or the
//! change).
//!
//! Sites are found with tree-sitter (the Python and Rust grammars, used
//! directly: `crate::syntax` keeps its own API), one list per
//! [`Operator`]; a seeded PRNG orders each list, spread over files first,
//! and the operators take turns, so N tasks cover every operator and many
//! files. A candidate is rejected, and counted by reason ([`Rejected`]),
//! when it leaves the file unchanged, when the mutated file no longer parses
//! clean, when the mutated line(s) occur twice in the mutated file (a model
//! quoting them could not say which), or when it repeats an earlier task's
//! file.
//!
//! Owns: walking the tree, finding sites, mutating, validating, the tasks'
//! data. Does not own: the instruction's words (`words`), running tasks
//! (the runner), or judging them (pass = `after/` byte for byte).
//!
//! Invariant: every emitted task's `after/` is the file's bytes exactly as
//! read (BOM, CRLF, tabs and all) and its `before/` differs from them only
//! inside the mutated range; the tasks depend on the tree's contents and the
//! seed alone (paths sorted, no clock, no hash-map order).

use std::collections::{BTreeMap, HashSet};
use std::io::Read as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

use tree_sitter::{InputEdit, Language, Node, Parser, Point, Tree};

use super::task::{Files, Task};
use crate::agent::words;

/// The one-line account of a generation, for the person (`words`).
pub use crate::agent::words::bench_mutate_generated as generated_line;

/// Files larger than this are not mutated (generated code, data tables).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Source bytes whose parse trees are kept for validating mutations by
/// incremental reparse (a tree takes some forty times its source: this
/// repository's 1.3 MB of `src/` keep about 50 MB); files past it are parsed
/// whole again for each candidate, which is some ten times slower.
const TREE_BUDGET: usize = 2 << 20;

/// Tasks generated when `mutate:DIR` names no N.
pub const DEFAULT_COUNT: usize = 50;

/// The source label of generated tasks (`results.jsonl`'s `source`).
pub const LABEL: &str = "mutate";

/// Directory names never walked into: build output, dependencies, vendored
/// code (hidden directories are skipped as well).
const SKIPPED_DIRS: &[&str] = &[
    "target",
    "node_modules",
    "vendor",
    "vendored",
    "third_party",
    "third-party",
    "site-packages",
    "__pycache__",
    "venv",
];

/// A language the generator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    /// `.py`, `.pyi`.
    Python,
    /// `.rs`.
    Rust,
}

impl Lang {
    /// The language of a file name, by extension.
    pub fn of(path: &str) -> Option<Lang> {
        match path.rsplit_once('.')?.1 {
            "py" | "pyi" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            _ => None,
        }
    }

    fn language(self) -> Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }
}

/// What a mutation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `<` ↔ `<=`, `>` ↔ `>=`.
    Comparison,
    /// `==` ↔ `!=`.
    Equality,
    /// An integer literal one more or one less.
    OffByOne,
    /// `true` ↔ `false` (`True` ↔ `False`).
    Boolean,
    /// An `if` that only returns (raises, breaks, continues) early, removed.
    Guard,
    /// Two adjacent arguments of a call swapped.
    SwapArgs,
    /// An `if`'s two branches swapped.
    SwapBranches,
    /// A statement (a call, an assignment) deleted.
    DeleteStatement,
    /// One use of a local name replaced by another local name.
    RenameUse,
}

impl Operator {
    /// Every operator, in the order they take turns.
    pub const ALL: &'static [Operator] = &[
        Operator::Comparison,
        Operator::Equality,
        Operator::OffByOne,
        Operator::Boolean,
        Operator::Guard,
        Operator::SwapArgs,
        Operator::SwapBranches,
        Operator::DeleteStatement,
        Operator::RenameUse,
    ];

    /// The name in task ids.
    pub fn name(self) -> &'static str {
        match self {
            Operator::Comparison => "comparison",
            Operator::Equality => "equality",
            Operator::OffByOne => "off-by-one",
            Operator::Boolean => "boolean",
            Operator::Guard => "guard",
            Operator::SwapArgs => "swap-args",
            Operator::SwapBranches => "swap-branches",
            Operator::DeleteStatement => "delete-statement",
            Operator::RenameUse => "rename-use",
        }
    }
}

/// Where in the file the bug is, as a bug report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A function or method (`name`, `Type::name`, `Class.name`).
    Function(String),
    /// A constant, static or top-level assignment.
    Item(String),
    /// Code at the file's top level.
    TopLevel,
}

/// What a flipped boolean feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagUse {
    /// An argument of a call to the named function.
    Argument(String),
    /// The value given to a name or field.
    Assigned(String),
    /// A returned value.
    Returned,
    /// Anything else.
    Other,
}

/// What a deleted statement did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Called the named function.
    Call(String),
    /// Assigned to (or updated) the named target.
    Update(String),
    /// Something else.
    Other,
}

/// The symptom of a mutation, as the model sees the `before/` file: the
/// data of the instruction (`words` turns it into words). Quoted code is
/// kept only when it is short and on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Symptom {
    /// A comparison now holds (or no longer holds) when its sides are equal.
    Boundary {
        /// The left side.
        left: Option<String>,
        /// The right side.
        right: Option<String>,
        /// Whether the mutated comparison holds at equality.
        holds_when_equal: bool,
    },
    /// An equality test inverted.
    Equality {
        /// The left side.
        left: Option<String>,
        /// The right side.
        right: Option<String>,
        /// Whether the mutated test is `==` (so it acts on equal values).
        acts_when_equal: bool,
    },
    /// A number one too high (or low).
    OffByOne {
        /// Whether the mutated number is one too high.
        too_high: bool,
    },
    /// A boolean inverted.
    Boolean {
        /// What it feeds.
        feeds: FlagUse,
    },
    /// An early exit gone.
    Guard {
        /// The condition it tested.
        condition: Option<String>,
    },
    /// Two arguments swapped.
    SwapArgs {
        /// The called function.
        callee: String,
    },
    /// The branches of an `if` swapped.
    SwapBranches {
        /// The condition.
        condition: Option<String>,
    },
    /// A statement gone.
    Deleted {
        /// What it did.
        step: Step,
    },
    /// One use of a name replaced by another.
    Rename {
        /// The name now used.
        used: String,
        /// The name meant.
        meant: String,
    },
}

/// One candidate mutation of one file's text (after its BOM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutation {
    /// The operator.
    pub operator: Operator,
    /// Its index among the file's sites for this operator, in document order.
    pub k: usize,
    /// The bytes replaced.
    pub range: Range<usize>,
    /// What replaces them.
    pub replacement: String,
    /// Where it is.
    pub place: Place,
    /// What goes wrong.
    pub symptom: Symptom,
}

impl Mutation {
    /// The mutated text.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.replacement.len());
        out.push_str(&text[..self.range.start]);
        out.push_str(&self.replacement);
        out.push_str(&text[self.range.end..]);
        out
    }
}

/// How a generation went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Python and Rust files mutated from (read, parsed clean).
    pub files: usize,
    /// Source files left out, by reason.
    pub skipped: SkippedFiles,
    /// Candidate sites found.
    pub sites: usize,
    /// Candidates rejected, by reason.
    pub rejected: Rejected,
    /// Tasks per operator.
    pub per_operator: BTreeMap<Operator, usize>,
}

/// Python and Rust files not used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkippedFiles {
    /// Larger than [`MAX_FILE_BYTES`].
    pub large: usize,
    /// Not UTF-8.
    pub not_utf8: usize,
    /// With a syntax error (for the grammar) before any mutation.
    pub unparsable: usize,
    /// Not a regular file, or unreadable.
    pub unreadable: usize,
}

/// Candidates rejected, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rejected {
    /// The mutated file equals the original.
    pub unchanged: usize,
    /// The mutated file does not parse clean.
    pub unparsable: usize,
    /// The mutated line(s) occur more than once in the mutated file.
    pub ambiguous: usize,
    /// The same mutated file as an earlier task's.
    pub duplicate: usize,
}

impl Rejected {
    /// All rejections.
    pub fn total(&self) -> usize {
        self.unchanged + self.unparsable + self.ambiguous + self.duplicate
    }
}

/// The tasks and how they were made.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The tasks, in the order generated.
    pub tasks: Vec<Task>,
    /// The figures.
    pub stats: Stats,
}

/// A tree that gives no tasks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MutateError {
    /// The directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// What was read.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// No Python or Rust file that parses clean.
    #[error("{}: {}", dir.display(), words::bench_mutate_no_sources(skipped))]
    NoSources {
        /// The tree.
        dir: PathBuf,
        /// The source files found but left out.
        skipped: SkippedFiles,
    },
}

/// One source file, read.
struct SourceFile {
    rel: String,
    lang: Lang,
    bytes: Vec<u8>,
    /// 3 when the file starts with a UTF-8 BOM (kept out of the parse).
    bom: usize,
    /// Its parse, kept within [`TREE_BUDGET`].
    tree: Option<Tree>,
}

impl SourceFile {
    fn text(&self) -> &str {
        std::str::from_utf8(&self.bytes[self.bom..]).unwrap_or_default()
    }
}

/// `count` tasks from the tree at `dir` (fewer when it has fewer valid
/// sites), deterministic for `seed`.
///
/// # Errors
///
/// [`MutateError`] when `dir` cannot be read or holds no Python or Rust file
/// that parses clean.
pub fn generate(dir: &Path, count: usize, seed: u64) -> Result<Generated, MutateError> {
    let mut stats = Stats::default();
    let files = walk(dir, &mut stats.skipped)?;
    let mut parsers = Parsers::default();
    let mut texts: Vec<SourceFile> = Vec::new();
    let mut sites: Vec<(usize, Mutation)> = Vec::new();
    let mut kept = 0;
    for mut file in files {
        let Some(tree) = parsers.parse(file.lang, file.text(), None) else {
            stats.skipped.unparsable += 1;
            continue;
        };
        if !clean(file.lang, &tree) {
            stats.skipped.unparsable += 1;
            continue;
        }
        let found = mutations(file.lang, file.text(), &tree);
        let index = texts.len();
        sites.extend(found.into_iter().map(|m| (index, m)));
        if kept + file.bytes.len() <= TREE_BUDGET {
            kept += file.bytes.len();
            file.tree = Some(tree);
        }
        texts.push(file);
    }
    if texts.is_empty() {
        return Err(MutateError::NoSources {
            dir: dir.to_path_buf(),
            skipped: stats.skipped,
        });
    }
    stats.files = texts.len();
    stats.sites = sites.len();
    let mut queues = queues(sites, seed);
    let mut tasks = Vec::new();
    let mut seen: HashSet<(usize, u64)> = HashSet::new();
    'outer: while tasks.len() < count {
        let mut progressed = false;
        for queue in &mut queues {
            if tasks.len() >= count {
                break 'outer;
            }
            while let Some((index, m)) = queue.pop() {
                let file = &texts[index];
                match check(file, &m, &mut parsers, &mut seen, index) {
                    Err(reason) => reason.count(&mut stats.rejected),
                    Ok(mutated) => {
                        *stats.per_operator.entry(m.operator).or_default() += 1;
                        tasks.push(task(file, &m, mutated));
                        progressed = true;
                        break;
                    }
                }
            }
        }
        if !progressed {
            break;
        }
    }
    Ok(Generated { tasks, stats })
}

/// Why a candidate was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    Unchanged,
    Unparsable,
    Ambiguous,
    Duplicate,
}

impl Reject {
    fn count(self, r: &mut Rejected) {
        match self {
            Reject::Unchanged => r.unchanged += 1,
            Reject::Unparsable => r.unparsable += 1,
            Reject::Ambiguous => r.ambiguous += 1,
            Reject::Duplicate => r.duplicate += 1,
        }
    }
}

/// The mutated file's bytes, or why the candidate is rejected.
fn check(
    file: &SourceFile,
    m: &Mutation,
    parsers: &mut Parsers,
    seen: &mut HashSet<(usize, u64)>,
    index: usize,
) -> Result<Vec<u8>, Reject> {
    let text = file.text();
    let mutated = m.apply(text);
    if mutated == text {
        return Err(Reject::Unchanged);
    }
    // From the file's tree moved through the edit, tree-sitter reparses
    // only around it.
    let old = file.tree.as_ref().map(|tree| {
        let mut tree = tree.clone();
        tree.edit(&InputEdit {
            start_byte: m.range.start,
            old_end_byte: m.range.end,
            new_end_byte: m.range.start + m.replacement.len(),
            start_position: point(text, m.range.start),
            old_end_position: point(text, m.range.end),
            new_end_position: point(&mutated, m.range.start + m.replacement.len()),
        });
        tree
    });
    match parsers.parse(file.lang, &mutated, old.as_ref()) {
        Some(tree) if clean(file.lang, &tree) => {}
        _ => return Err(Reject::Unparsable),
    }
    let span = m.range.start..m.range.start + m.replacement.len();
    if !unique_window(&mutated, span) {
        return Err(Reject::Ambiguous);
    }
    if !seen.insert((index, xxhash_rust::xxh3::xxh3_64(mutated.as_bytes()))) {
        return Err(Reject::Duplicate);
    }
    let mut bytes = file.bytes[..file.bom].to_vec();
    bytes.extend_from_slice(mutated.as_bytes());
    Ok(bytes)
}

fn task(file: &SourceFile, m: &Mutation, mutated: Vec<u8>) -> Task {
    Task {
        id: format!("{LABEL}/{}/{}/{}", file.rel, m.operator.name(), m.k),
        source: LABEL.to_owned(),
        instruction: words::bench_mutate_instruction(&file.rel, &m.place, &m.symptom),
        before: Files::from([(file.rel.clone(), mutated)]),
        after: Some(Files::from([(file.rel.clone(), file.bytes.clone())])),
        solution: None,
        check: None,
        files: vec![file.rel.clone()],
    }
}

/// Whether the lines the mutated `span` touches (for a deletion, the lines
/// either side of it), compared without surrounding whitespace, occur once
/// in `text` as a run.
fn unique_window(text: &str, span: Range<usize>) -> bool {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
        .filter(|&i| i < text.len() || i == 0)
        .collect();
    let line_of = |pos: usize| starts.partition_point(|&s| s <= pos).saturating_sub(1);
    let lines: Vec<&str> = starts
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let e = starts.get(i + 1).copied().unwrap_or(text.len());
            text[s..e].trim()
        })
        .collect();
    let window = if span.is_empty() {
        let first = if span.start == 0 {
            0
        } else {
            line_of(span.start - 1)
        };
        let last = line_of(span.start.min(text.len().saturating_sub(1)));
        first..last + 1
    } else {
        line_of(span.start)..line_of(span.end - 1) + 1
    };
    let needle = &lines[window];
    lines
        .windows(needle.len().max(1))
        .filter(|w| *w == needle)
        .count()
        == 1
}

/// Whether a tree is free of syntax errors. Python's grammar also accepts
/// an empty block (`def f():` with no body), which Python refuses.
fn clean(lang: Lang, tree: &Tree) -> bool {
    let root = tree.root_node();
    if root.has_error() {
        return false;
    }
    if lang != Lang::Python {
        return true;
    }
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.kind() == "block" && named_code(node).is_empty() {
            return false;
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return true;
            }
        }
    }
}

/// The row and byte column of `offset` in `text`.
fn point(text: &str, offset: usize) -> Point {
    let before = &text.as_bytes()[..offset];
    let row = memchr::memchr_iter(b'\n', before).count();
    let column = offset - memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    Point { row, column }
}

/// One parser per language, reused.
#[derive(Default)]
struct Parsers {
    python: Option<Parser>,
    rust: Option<Parser>,
}

impl Parsers {
    fn parse(&mut self, lang: Lang, text: &str, old: Option<&Tree>) -> Option<Tree> {
        let slot = match lang {
            Lang::Python => &mut self.python,
            Lang::Rust => &mut self.rust,
        };
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&lang.language()).ok()?;
            *slot = Some(p);
        }
        slot.as_mut()?.parse(text, old)
    }
}

/// The per-operator queues, each shuffled by the seed and then spread over
/// files (every file's first pick before any file's second), reversed so
/// that `pop` takes the next.
fn queues(sites: Vec<(usize, Mutation)>, seed: u64) -> Vec<Vec<(usize, Mutation)>> {
    let mut by_op: BTreeMap<Operator, Vec<(usize, Mutation)>> = BTreeMap::new();
    for s in sites {
        by_op.entry(s.1.operator).or_default().push(s);
    }
    let mut out = Vec::new();
    for (op, mut list) in by_op {
        let mut rng = SplitMix(seed ^ (op as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for i in (1..list.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            list.swap(i, j);
        }
        let mut rank: BTreeMap<usize, usize> = BTreeMap::new();
        let mut ranked: Vec<(usize, usize, (usize, Mutation))> = list
            .into_iter()
            .enumerate()
            .map(|(pos, s)| {
                let r = rank.entry(s.0).or_default();
                *r += 1;
                (*r, pos, s)
            })
            .collect();
        ranked.sort_by_key(|(r, pos, _)| (*r, *pos));
        let mut queue: Vec<(usize, Mutation)> = ranked.into_iter().map(|(_, _, s)| s).collect();
        queue.reverse();
        out.push(queue);
    }
    out
}

/// A small seeded PRNG (SplitMix64): the same numbers on every platform.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The Python and Rust files under `dir`, sorted by path; hidden, build,
/// dependency and vendored directories, symlinks and special files are
/// left out, as are files too large or not UTF-8 (counted in `skipped`).
fn walk(dir: &Path, skipped: &mut SkippedFiles) -> Result<Vec<SourceFile>, MutateError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MutateError::Io { path, source }
    };
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&path)
            .map_err(io(&path))?
            .collect::<Result<_, _>>()
            .map_err(io(&path))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        let mut dirs = Vec::new();
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if kind.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                    dirs.push((entry.path(), child));
                }
                continue;
            }
            let Some(lang) = Lang::of(&name) else {
                continue;
            };
            if !kind.is_file() {
                skipped.unreadable += 1;
                continue;
            }
            match read_source(&entry.path()) {
                Read::Text(bytes) => {
                    let bom = if bytes.starts_with(b"\xef\xbb\xbf") {
                        3
                    } else {
                        0
                    };
                    out.push(SourceFile {
                        rel: child,
                        lang,
                        bytes,
                        bom,
                        tree: None,
                    });
                }
                Read::Large => skipped.large += 1,
                Read::NotUtf8 => skipped.not_utf8 += 1,
                Read::Unreadable => skipped.unreadable += 1,
            }
        }
        // Depth first, in name order: the stack pops the first name first.
        stack.extend(dirs.into_iter().rev());
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

enum Read {
    Text(Vec<u8>),
    Large,
    NotUtf8,
    Unreadable,
}

/// A regular file's bytes, read through one handle that follows no symlink
/// and does not wait on a FIFO swapped in meanwhile.
fn read_source(path: &Path) -> Read {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(flags.bits() as i32);
    }
    let Ok(file) = options.open(path) else {
        return Read::Unreadable;
    };
    let Ok(meta) = file.metadata() else {
        return Read::Unreadable;
    };
    if !meta.is_file() {
        return Read::Unreadable;
    }
    if meta.len() > MAX_FILE_BYTES {
        return Read::Large;
    }
    let mut bytes = Vec::new();
    if file
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Read::Unreadable;
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Read::Large;
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Read::NotUtf8;
    }
    Read::Text(bytes)
}

/// Every candidate mutation of `text` (parsed as `tree`), in document order
/// per operator. Each depends on the text alone (an off-by-one's direction
/// on its position), so a task id names the same task under every seed.
pub fn mutations(lang: Lang, text: &str, tree: &Tree) -> Vec<Mutation> {
    let mut finder = Finder {
        lang,
        text,
        out: Vec::new(),
        counts: BTreeMap::new(),
    };
    let mut cursor = tree.walk();
    // An iterative pre-order walk: deep trees cannot overflow the stack.
    'walk: loop {
        let node = cursor.node();
        let skip = finder.is_test_module(node);
        if !skip {
            finder.visit(node);
        }
        if !skip && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    finder.out
}

struct Finder<'a> {
    lang: Lang,
    text: &'a str,
    out: Vec<Mutation>,
    counts: BTreeMap<Operator, usize>,
}

/// Longest code quoted in an instruction.
const MAX_QUOTE: usize = 48;

impl<'a> Finder<'a> {
    fn src(&self, node: Node<'_>) -> &'a str {
        &self.text[node.byte_range()]
    }

    /// Short one-line code, for quoting.
    fn quote(&self, node: Node<'_>) -> Option<String> {
        let s = self.src(node).trim();
        (!s.contains('\n') && s.chars().count() <= MAX_QUOTE).then(|| s.to_owned())
    }

    fn push(
        &mut self,
        operator: Operator,
        node: Node<'_>,
        range: Range<usize>,
        replacement: String,
        symptom: Symptom,
    ) {
        let place = self.place(node);
        let k = self.counts.entry(operator).or_default();
        let m = Mutation {
            operator,
            k: *k,
            range,
            replacement,
            place,
            symptom,
        };
        *k += 1;
        self.out.push(m);
    }

    /// Rust's `mod tests` (and `mod test`): tests are not the code under test.
    fn is_test_module(&self, node: Node<'_>) -> bool {
        self.lang == Lang::Rust
            && node.kind() == "mod_item"
            && node
                .child_by_field_name("name")
                .is_some_and(|n| matches!(self.src(n), "tests" | "test"))
    }

    fn visit(&mut self, node: Node<'_>) {
        match (self.lang, node.kind()) {
            (Lang::Python, "comparison_operator") => self.python_comparison(node),
            (Lang::Rust, "binary_expression") => self.rust_comparison(node),
            (Lang::Python, "integer") | (Lang::Rust, "integer_literal") => self.off_by_one(node),
            (Lang::Python, "true" | "false") | (Lang::Rust, "boolean_literal") => {
                self.boolean(node);
            }
            (Lang::Python, "if_statement") | (Lang::Rust, "if_expression") => {
                self.guard(node);
                self.swap_branches(node);
            }
            (Lang::Python, "argument_list") | (Lang::Rust, "arguments") => self.swap_args(node),
            (Lang::Python | Lang::Rust, "expression_statement") => self.delete_statement(node),
            (Lang::Python, "function_definition") | (Lang::Rust, "function_item") => {
                self.rename_use(node);
            }
            _ => {}
        }
    }

    fn python_comparison(&mut self, node: Node<'_>) {
        if node.named_child_count() != 2 {
            return;
        }
        let mut cursor = node.walk();
        let ops: Vec<Node<'_>> = node
            .children(&mut cursor)
            .filter(|c| !c.is_named())
            .collect();
        if let [op] = ops[..] {
            self.comparison(node, op, node.named_child(0), node.named_child(1));
        }
    }

    fn rust_comparison(&mut self, node: Node<'_>) {
        if let Some(op) = node.child_by_field_name("operator") {
            let (l, r) = (
                node.child_by_field_name("left"),
                node.child_by_field_name("right"),
            );
            self.comparison(node, op, l, r);
        }
    }

    fn comparison(
        &mut self,
        node: Node<'_>,
        op: Node<'_>,
        l: Option<Node<'_>>,
        r: Option<Node<'_>>,
    ) {
        let (left, right) = (l.and_then(|n| self.quote(n)), r.and_then(|n| self.quote(n)));
        let (operator, to, symptom) = match op.kind() {
            "<" | ">" | "<=" | ">=" => {
                let to = match op.kind() {
                    "<" => "<=",
                    "<=" => "<",
                    ">" => ">=",
                    _ => ">",
                };
                let holds_when_equal = to.ends_with('=');
                (
                    Operator::Comparison,
                    to,
                    Symptom::Boundary {
                        left,
                        right,
                        holds_when_equal,
                    },
                )
            }
            "==" | "!=" => {
                let to = if op.kind() == "==" { "!=" } else { "==" };
                (
                    Operator::Equality,
                    to,
                    Symptom::Equality {
                        left,
                        right,
                        acts_when_equal: to == "==",
                    },
                )
            }
            _ => return,
        };
        self.push(operator, node, op.byte_range(), to.to_owned(), symptom);
    }

    fn off_by_one(&mut self, node: Node<'_>) {
        let text = self.src(node);
        let digits_end = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (digits, suffix) = text.split_at(digits_end);
        let suffix_ok = suffix.is_empty()
            || (self.lang == Lang::Rust
                && matches!(
                    suffix,
                    "u8" | "u16"
                        | "u32"
                        | "u64"
                        | "u128"
                        | "usize"
                        | "i8"
                        | "i16"
                        | "i32"
                        | "i64"
                        | "i128"
                        | "isize"
                ));
        // Decimal only, no leading zero, small enough to stay in any type.
        if digits.is_empty() || !suffix_ok || (digits.len() > 1 && digits.starts_with('0')) {
            return;
        }
        let Ok(n) = digits.parse::<u32>() else {
            return;
        };
        if n >= i8::MAX as u32 && suffix.starts_with("i8") || n >= u8::MAX as u32 && suffix == "u8"
        {
            return;
        }
        let up = n == 0 || SplitMix(node.start_byte() as u64).next() & 1 == 0;
        let new = if up { n + 1 } else { n - 1 };
        let negated = node.parent().is_some_and(|p| {
            matches!(
                p.kind(),
                "unary_operator" | "unary_expression" | "negative_literal"
            ) && self.src(p).starts_with('-')
        });
        self.push(
            Operator::OffByOne,
            node,
            node.byte_range(),
            format!("{new}{suffix}"),
            Symptom::OffByOne {
                too_high: up != negated,
            },
        );
    }

    fn boolean(&mut self, node: Node<'_>) {
        let flipped = match self.src(node) {
            "true" => "false",
            "false" => "true",
            "True" => "False",
            "False" => "True",
            _ => return,
        };
        let feeds = self.flag_use(node);
        self.push(
            Operator::Boolean,
            node,
            node.byte_range(),
            flipped.to_owned(),
            Symptom::Boolean { feeds },
        );
    }

    fn flag_use(&self, node: Node<'_>) -> FlagUse {
        let Some(parent) = node.parent() else {
            return FlagUse::Other;
        };
        match parent.kind() {
            "argument_list" | "arguments" => parent
                .parent()
                .and_then(|call| call.child_by_field_name("function"))
                .map_or(FlagUse::Other, |f| FlagUse::Argument(self.callee(f))),
            "keyword_argument" => parent
                .child_by_field_name("name")
                .map_or(FlagUse::Other, |n| {
                    FlagUse::Assigned(self.src(n).to_owned())
                }),
            "field_initializer" => parent
                .child_by_field_name("field")
                .map_or(FlagUse::Other, |n| {
                    FlagUse::Assigned(self.src(n).to_owned())
                }),
            "assignment" | "assignment_expression" => parent
                .child_by_field_name("left")
                .and_then(|n| self.quote(n))
                .map_or(FlagUse::Other, FlagUse::Assigned),
            "let_declaration" => parent
                .child_by_field_name("pattern")
                .and_then(|n| self.quote(n))
                .map_or(FlagUse::Other, FlagUse::Assigned),
            "return_statement" | "return_expression" => FlagUse::Returned,
            // A block's tail expression is the function's value when the
            // block is its body.
            "block"
                if self.lang == Lang::Rust
                    && parent.parent().is_some_and(|g| g.kind() == "function_item")
                    && parent.named_child(parent.named_child_count().saturating_sub(1))
                        == Some(node) =>
            {
                FlagUse::Returned
            }
            _ => FlagUse::Other,
        }
    }

    /// The called function's short name: the last segment of a path or
    /// method chain.
    fn callee(&self, function: Node<'_>) -> String {
        let text = self.src(function);
        let text = text.split('<').next().unwrap_or(text);
        let last = text
            .rsplit(['.', ':'])
            .next()
            .unwrap_or(text)
            .trim()
            .trim_end_matches("::");
        last.to_owned()
    }

    /// The `if` without an else whose body only leaves early, removed with
    /// its lines.
    fn guard(&mut self, node: Node<'_>) {
        if node.child_by_field_name("alternative").is_some() {
            return;
        }
        let Some(body) = node.child_by_field_name("consequence") else {
            return;
        };
        let stmts = named_code(body);
        let [only] = stmts[..] else {
            return;
        };
        let exit = match self.lang {
            Lang::Python => matches!(
                only.kind(),
                "return_statement" | "raise_statement" | "continue_statement" | "break_statement"
            ),
            Lang::Rust => {
                let inner = if only.kind() == "expression_statement" {
                    only.named_child(0)
                } else {
                    Some(only)
                };
                inner.is_some_and(|n| {
                    matches!(
                        n.kind(),
                        "return_expression" | "break_expression" | "continue_expression"
                    ) || (n.kind() == "macro_invocation"
                        && n.child_by_field_name("macro").is_some_and(|m| {
                            matches!(self.src(m), "panic" | "bail" | "unreachable" | "todo")
                        }))
                })
            }
        };
        if !exit {
            return;
        }
        // The statement to remove: Rust's `if` stands in an expression
        // statement, or is a block's non-final expression.
        let stmt = match self.lang {
            Lang::Python => node,
            Lang::Rust => match node.parent() {
                Some(p) if p.kind() == "expression_statement" => p,
                Some(p) if p.kind() == "block" && !is_last_code(p, node) => node,
                _ => return,
            },
        };
        let Some(lines) = whole_lines(self.text, stmt.byte_range()) else {
            return;
        };
        let condition = node
            .child_by_field_name("condition")
            .and_then(|c| self.quote(c));
        self.push(
            Operator::Guard,
            node,
            lines,
            String::new(),
            Symptom::Guard { condition },
        );
    }

    fn swap_branches(&mut self, node: Node<'_>) {
        let Some(then) = node.child_by_field_name("consequence") else {
            return;
        };
        let Some(condition) = node.child_by_field_name("condition") else {
            return;
        };
        let other = match self.lang {
            Lang::Python => {
                let mut cursor = node.walk();
                let alts: Vec<Node<'_>> = node
                    .children_by_field_name("alternative", &mut cursor)
                    .collect();
                match alts[..] {
                    [alt] if alt.kind() == "else_clause" => alt.child_by_field_name("body"),
                    _ => None,
                }
            }
            Lang::Rust => {
                if matches!(condition.kind(), "let_condition" | "let_chain") {
                    return;
                }
                node.child_by_field_name("alternative")
                    .and_then(|alt| alt.named_child(0))
                    .filter(|b| b.kind() == "block")
            }
        };
        let Some(other) = other else {
            return;
        };
        // Python blocks move only between equal indents.
        if self.lang == Lang::Python
            && then.start_position().column != other.start_position().column
        {
            return;
        }
        let (a, b) = (then.byte_range(), other.byte_range());
        if a.end > b.start {
            return;
        }
        let replacement = format!(
            "{}{}{}",
            &self.text[b.clone()],
            &self.text[a.end..b.start],
            &self.text[a.clone()]
        );
        let condition = self.quote(condition);
        self.push(
            Operator::SwapBranches,
            node,
            a.start..b.end,
            replacement,
            Symptom::SwapBranches { condition },
        );
    }

    fn swap_args(&mut self, node: Node<'_>) {
        let Some(call) = node.parent() else {
            return;
        };
        if !matches!(call.kind(), "call" | "call_expression") {
            return;
        }
        let Some(function) = call.child_by_field_name("function") else {
            return;
        };
        let callee = self.callee(function);
        let args = named_code(node);
        let plain = |n: &Node<'_>| {
            !matches!(
                n.kind(),
                "keyword_argument" | "list_splat" | "dictionary_splat" | "attribute_item"
            )
        };
        for pair in args.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if !plain(&a) || !plain(&b) {
                continue;
            }
            let replacement = format!(
                "{}{}{}",
                self.src(b),
                &self.text[a.end_byte()..b.start_byte()],
                self.src(a)
            );
            self.push(
                Operator::SwapArgs,
                node,
                a.start_byte()..b.end_byte(),
                replacement,
                Symptom::SwapArgs {
                    callee: callee.clone(),
                },
            );
        }
    }

    fn delete_statement(&mut self, node: Node<'_>) {
        let Some(block) = node.parent() else {
            return;
        };
        if block.kind() != "block" || named_code(block).len() < 2 {
            return;
        }
        let Some(inner) = node.named_child(0) else {
            return;
        };
        let inner = if inner.kind() == "try_expression"
            || inner.kind() == "await"
            || inner.kind() == "await_expression"
        {
            inner.named_child(0).unwrap_or(inner)
        } else {
            inner
        };
        let step = match inner.kind() {
            "call" | "call_expression" => match inner.child_by_field_name("function") {
                Some(f) => Step::Call(self.callee(f)),
                None => return,
            },
            "assignment"
            | "augmented_assignment"
            | "assignment_expression"
            | "compound_assignment_expr" => inner
                .child_by_field_name("left")
                .and_then(|l| self.quote(l))
                .map_or(Step::Other, Step::Update),
            _ => return,
        };
        let Some(lines) = whole_lines(self.text, node.byte_range()) else {
            return;
        };
        self.push(
            Operator::DeleteStatement,
            node,
            lines,
            String::new(),
            Symptom::Deleted { step },
        );
    }

    /// Local names: identifiers in the body used as values (not called,
    /// not attributes, fields, keywords or paths) at least twice. Each later
    /// use of one becomes a site, renamed to the next name in sorted order.
    fn rename_use(&mut self, function: Node<'_>) {
        let Some(body) = function.child_by_field_name("body") else {
            return;
        };
        let mut uses: BTreeMap<&'a str, Vec<Node<'_>>> = BTreeMap::new();
        let mut cursor = body.walk();
        'walk: loop {
            let node = cursor.node();
            // Nested functions have their own names.
            let nested = node != body
                && matches!(
                    node.kind(),
                    "function_definition" | "function_item" | "closure_expression" | "lambda"
                );
            if node.kind() == "identifier" && self.is_value_use(node) {
                uses.entry(self.src(node)).or_default().push(node);
            }
            if !nested && cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    continue 'walk;
                }
                if !cursor.goto_parent() || cursor.node() == body {
                    break 'walk;
                }
            }
        }
        // Capitalised names are types, constants and variants (`None`, `Ok`),
        // not locals.
        uses.retain(|name, list| {
            list.len() >= 2
                && !matches!(*name, "self" | "cls" | "_")
                && !name.starts_with(|c: char| c.is_uppercase())
        });
        let names: Vec<&'a str> = uses.keys().copied().collect();
        if names.len() < 2 {
            return;
        }
        for (i, name) in names.iter().enumerate() {
            let other = names[(i + 1) % names.len()];
            for node in uses[name].iter().skip(1) {
                self.push(
                    Operator::RenameUse,
                    *node,
                    node.byte_range(),
                    other.to_owned(),
                    Symptom::Rename {
                        used: other.to_owned(),
                        meant: (*name).to_owned(),
                    },
                );
            }
        }
    }

    fn is_value_use(&self, node: Node<'_>) -> bool {
        let Some(parent) = node.parent() else {
            return false;
        };
        let field = |name: &str| parent.child_by_field_name(name) == Some(node);
        match parent.kind() {
            "call" | "call_expression" => !field("function"),
            "attribute" => !field("attribute"),
            "keyword_argument" => !field("name"),
            "macro_invocation" | "scoped_identifier" | "scoped_type_identifier" => false,
            "function_definition" | "class_definition" | "function_item" => !field("name"),
            "import_statement" | "import_from_statement" | "aliased_import" | "dotted_name" => {
                false
            }
            "generic_function" | "tuple_struct_pattern" | "struct_pattern" => false,
            _ => true,
        }
    }

    /// The function (qualified by its impl or class), item, or top level
    /// around `node`.
    fn place(&self, node: Node<'_>) -> Place {
        let mut function: Option<String> = None;
        let mut at = node.parent();
        while let Some(n) = at {
            let name = || {
                n.child_by_field_name("name")
                    .map(|x| self.src(x).to_owned())
            };
            match n.kind() {
                "function_definition" | "function_item" if function.is_none() => function = name(),
                "class_definition" | "trait_item" => {
                    if let (Some(f), Some(owner)) = (&function, name()) {
                        let sep = if self.lang == Lang::Python { "." } else { "::" };
                        return Place::Function(format!("{owner}{sep}{f}"));
                    }
                }
                "impl_item" => {
                    if let (Some(f), Some(t)) = (&function, n.child_by_field_name("type")) {
                        let t = self.src(t);
                        let t = t.split('<').next().unwrap_or(t);
                        return Place::Function(format!("{t}::{f}"));
                    }
                }
                "const_item" | "static_item" if function.is_none() => {
                    if let Some(item) = name() {
                        return Place::Item(item);
                    }
                }
                "expression_statement"
                    if function.is_none()
                        && self.lang == Lang::Python
                        && n.parent().is_some_and(|p| p.kind() == "module") =>
                {
                    let target = n
                        .named_child(0)
                        .filter(|a| a.kind() == "assignment")
                        .and_then(|a| a.child_by_field_name("left"))
                        .filter(|l| l.kind() == "identifier");
                    if let Some(t) = target {
                        return Place::Item(self.src(t).to_owned());
                    }
                }
                _ => {}
            }
            at = n.parent();
        }
        function.map_or(Place::TopLevel, Place::Function)
    }
}

/// Named children that are code (comments aside).
fn named_code(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|c| !c.kind().ends_with("comment"))
        .collect()
}

fn is_last_code(block: Node<'_>, node: Node<'_>) -> bool {
    named_code(block).last() == Some(&node)
}

/// The lines `range` fills alone (only whitespace beside it), with their
/// line ending; `None` when it shares a line with other code.
fn whole_lines(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    if !text[start..range.start].trim().is_empty() {
        return None;
    }
    let end = text[range.end..]
        .find('\n')
        .map_or(text.len(), |i| range.end + i + 1);
    if !text[range.end..end].trim().is_empty() {
        return None;
    }
    Some(start..end)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn parse(lang: Lang, text: &str) -> Tree {
        let mut p = Parsers::default();
        let tree = p.parse(lang, text, None).unwrap();
        assert!(!tree.root_node().has_error(), "{text}");
        tree
    }

    /// The mutated texts of one operator on a snippet.
    fn mutated(lang: Lang, text: &str, op: Operator) -> Vec<String> {
        let tree = parse(lang, text);
        mutations(lang, text, &tree)
            .into_iter()
            .filter(|m| m.operator == op)
            .map(|m| m.apply(text))
            .collect()
    }

    fn one(lang: Lang, text: &str, op: Operator) -> String {
        let all = mutated(lang, text, op);
        assert_eq!(all.len(), 1, "{op:?}: {all:#?}");
        all.into_iter().next().unwrap()
    }

    #[test]
    fn comparison_moves_the_boundary() {
        let py = "def f(a, b):\n    return a < b\n";
        assert_eq!(
            one(Lang::Python, py, Operator::Comparison),
            "def f(a, b):\n    return a <= b\n"
        );
        let rs = "fn f(a: u8, b: u8) -> bool {\n    a >= b\n}\n";
        assert_eq!(
            one(Lang::Rust, rs, Operator::Comparison),
            "fn f(a: u8, b: u8) -> bool {\n    a > b\n}\n"
        );
        // A chained comparison is left alone; `in` is not a comparison here.
        assert!(
            mutated(
                Lang::Python,
                "x = a < b < c\ny = a in b\n",
                Operator::Comparison
            )
            .is_empty()
        );
    }

    #[test]
    fn equality_inverts() {
        let py = "def f(a):\n    return a == 0\n";
        assert_eq!(
            one(Lang::Python, py, Operator::Equality),
            "def f(a):\n    return a != 0\n"
        );
        let rs = "fn f(a: u8) -> bool {\n    a != 0\n}\n";
        assert_eq!(
            one(Lang::Rust, rs, Operator::Equality),
            "fn f(a: u8) -> bool {\n    a == 0\n}\n"
        );
    }

    #[test]
    fn off_by_one_moves_a_literal_by_one() {
        let rs = "const N: usize = 0;\nfn f() -> u8 { 7u8 }\n";
        let all = mutated(Lang::Rust, rs, Operator::OffByOne);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0], "const N: usize = 1;\nfn f() -> u8 { 7u8 }\n");
        assert!(
            all[1] == "const N: usize = 0;\nfn f() -> u8 { 8u8 }\n"
                || all[1] == "const N: usize = 0;\nfn f() -> u8 { 6u8 }\n",
            "{}",
            all[1]
        );
        // Hex, underscores, floats and leading zeros are left alone.
        assert!(
            mutated(
                Lang::Rust,
                "const A: u32 = 0x10 + 1_000;\nconst B: f64 = 1.5;\n",
                Operator::OffByOne
            )
            .is_empty()
        );
        let py = "LIMIT = 10\n";
        let m = one(Lang::Python, py, Operator::OffByOne);
        assert!(m == "LIMIT = 11\n" || m == "LIMIT = 9\n", "{m}");
    }

    #[test]
    fn boolean_flips() {
        let py = "def f():\n    return True\n";
        assert_eq!(
            one(Lang::Python, py, Operator::Boolean),
            "def f():\n    return False\n"
        );
        let rs = "fn f() { g(true); }\n";
        assert_eq!(
            one(Lang::Rust, rs, Operator::Boolean),
            "fn f() { g(false); }\n"
        );
        let tree = parse(Lang::Rust, rs);
        let m = &mutations(Lang::Rust, rs, &tree)[0];
        assert_eq!(
            m.symptom,
            Symptom::Boolean {
                feeds: FlagUse::Argument("g".into())
            }
        );
        assert_eq!(m.place, Place::Function("f".into()));
    }

    #[test]
    fn guard_is_removed_with_its_lines() {
        let py = "def f(x):\n    if x is None:\n        return 0\n    return x + 1\n";
        assert_eq!(
            one(Lang::Python, py, Operator::Guard),
            "def f(x):\n    return x + 1\n"
        );
        let rs = "fn f(x: Option<u8>) -> u8 {\r\n    if x.is_none() {\r\n        return 0;\r\n    }\r\n    x.unwrap_or(1)\r\n}\r\n";
        assert_eq!(
            one(Lang::Rust, rs, Operator::Guard),
            "fn f(x: Option<u8>) -> u8 {\r\n    x.unwrap_or(1)\r\n}\r\n"
        );
        // An `if` with an else, or one that does more than leave, is no guard.
        let not = "def f(x):\n    if x:\n        return 0\n    else:\n        pass\n    if x:\n        print(x)\n        return 1\n";
        assert!(mutated(Lang::Python, not, Operator::Guard).is_empty());
    }

    #[test]
    fn swap_args_swaps_adjacent_plain_arguments() {
        let py = "def f():\n    g(a, b, key=c)\n";
        assert_eq!(
            one(Lang::Python, py, Operator::SwapArgs),
            "def f():\n    g(b, a, key=c)\n"
        );
        let rs = "fn f() { x.copy(src, dst); }\n";
        assert_eq!(
            one(Lang::Rust, rs, Operator::SwapArgs),
            "fn f() { x.copy(dst, src); }\n"
        );
        let tree = parse(Lang::Rust, rs);
        let m = mutations(Lang::Rust, rs, &tree)
            .into_iter()
            .find(|m| m.operator == Operator::SwapArgs)
            .unwrap();
        assert_eq!(
            m.symptom,
            Symptom::SwapArgs {
                callee: "copy".into()
            }
        );
    }

    #[test]
    fn swap_branches_swaps_then_and_else() {
        let py = "def f(x):\n    if x:\n        a()\n    else:\n        b()\n        c()\n";
        assert_eq!(
            one(Lang::Python, py, Operator::SwapBranches),
            "def f(x):\n    if x:\n        b()\n        c()\n    else:\n        a()\n"
        );
        let rs = "fn f(x: bool) -> u8 {\n    if x { 1 } else { 2 }\n}\n";
        assert_eq!(
            one(Lang::Rust, rs, Operator::SwapBranches),
            "fn f(x: bool) -> u8 {\n    if x { 2 } else { 1 }\n}\n"
        );
        // `elif` chains and `if let` are left alone.
        let chain =
            "def f(x):\n    if x:\n        a()\n    elif y:\n        b()\n    else:\n        c()\n";
        assert!(mutated(Lang::Python, chain, Operator::SwapBranches).is_empty());
        let iflet = "fn f(x: Option<u8>) -> u8 {\n    if let Some(v) = x { v } else { 0 }\n}\n";
        assert!(mutated(Lang::Rust, iflet, Operator::SwapBranches).is_empty());
    }

    #[test]
    fn delete_statement_removes_a_call_or_assignment() {
        let py = "def f(xs):\n    xs.sort()\n    total = 0\n    return xs\n";
        let all = mutated(Lang::Python, py, Operator::DeleteStatement);
        assert_eq!(
            all,
            [
                "def f(xs):\n    total = 0\n    return xs\n",
                "def f(xs):\n    xs.sort()\n    return xs\n",
            ]
        );
        let rs = "fn f(v: &mut Vec<u8>) {\n    v.sort();\n    v.dedup();\n}\n";
        assert_eq!(mutated(Lang::Rust, rs, Operator::DeleteStatement).len(), 2);
        // A block's only statement stays.
        assert!(
            mutated(
                Lang::Python,
                "def f(xs):\n    xs.sort()\n",
                Operator::DeleteStatement
            )
            .is_empty()
        );
    }

    #[test]
    fn rename_use_swaps_one_later_use_of_a_local() {
        let py = "def f(a, b):\n    lo = a\n    hi = b\n    return lo - hi\n";
        let all = mutated(Lang::Python, py, Operator::RenameUse);
        // a, b: one use each in the body; lo, hi: two each → one later use each.
        assert_eq!(
            all,
            [
                "def f(a, b):\n    lo = a\n    hi = b\n    return lo - lo\n",
                "def f(a, b):\n    lo = a\n    hi = b\n    return hi - hi\n",
            ]
        );
        let tree = parse(Lang::Python, py);
        let m = mutations(Lang::Python, py, &tree)
            .into_iter()
            .find(|m| m.operator == Operator::RenameUse)
            .unwrap();
        assert_eq!(
            m.symptom,
            Symptom::Rename {
                used: "lo".into(),
                meant: "hi".into()
            }
        );
    }

    #[test]
    fn rename_use_leaves_variants_and_constants_alone() {
        let rs = "fn f(x: Option<u8>) -> Option<u8> {\n    if x == None {\n        return None;\n    }\n    let y = MAX;\n    match x {\n        Some(v) => Some(v + MAX),\n        None => None,\n    }\n}\n";
        let all = mutated(Lang::Rust, rs, Operator::RenameUse);
        for m in &all {
            assert!(!m.contains("None") || m.matches("None").count() == 4, "{m}");
        }
        let tree = parse(Lang::Rust, rs);
        for m in mutations(Lang::Rust, rs, &tree) {
            if let Symptom::Rename { used, meant } = &m.symptom {
                assert!(used.chars().next().unwrap().is_lowercase(), "{used}");
                assert!(meant.chars().next().unwrap().is_lowercase(), "{meant}");
            }
        }
    }

    #[test]
    fn places_name_the_method_and_item() {
        let rs = "impl<T> Stack<T> {\n    fn push(&mut self) -> bool { true }\n}\nconst MAX: u8 = 3;\nmod tests {\n    fn t() -> bool { true }\n}\n";
        let tree = parse(Lang::Rust, rs);
        let all = mutations(Lang::Rust, rs, &tree);
        let places: Vec<&Place> = all.iter().map(|m| &m.place).collect();
        assert_eq!(
            places,
            [
                &Place::Function("Stack::push".into()),
                &Place::Item("MAX".into())
            ]
        );
        let py = "class A:\n    def m(self):\n        return True\n";
        let tree = parse(Lang::Python, py);
        assert_eq!(
            mutations(Lang::Python, py, &tree)[0].place,
            Place::Function("A.m".into())
        );
    }

    #[test]
    fn an_empty_python_body_is_not_clean() {
        let mut p = Parsers::default();
        let empty = p.parse(Lang::Python, "def f(x):\n\ny = 1\n", None).unwrap();
        assert!(!empty.root_node().has_error(), "the grammar's gap");
        assert!(!clean(Lang::Python, &empty));
        let full = p
            .parse(Lang::Python, "def f(x):\n    pass\n", None)
            .unwrap();
        assert!(clean(Lang::Python, &full));
    }

    /// Validation reparses incrementally from the file's tree: it must judge
    /// every candidate as a parse from scratch does.
    #[test]
    fn incremental_reparse_judges_as_a_full_parse() {
        let cases = [
            (
                Lang::Python,
                "def f(x):\n    if x:\n        return 1\n\n\ndef g(a, b):\n    if a < b:\n        return a\n    a.sort()\n    b = a\n    return g(a, b) == True\n",
            ),
            (
                Lang::Rust,
                "fn f(v: &mut Vec<u8>, n: usize) -> bool {\n    if n > 3 {\n        return false;\n    }\n    v.push(1);\n    let m = n + 1;\n    if m == n { g(m, n) } else { true }\n}\n",
            ),
        ];
        for (lang, text) in cases {
            let mut p = Parsers::default();
            let tree = p.parse(lang, text, None).unwrap();
            let file = SourceFile {
                rel: "x".into(),
                lang,
                bytes: text.as_bytes().to_vec(),
                bom: 0,
                tree: Some(tree.clone()),
            };
            let all = mutations(lang, text, &tree);
            assert!(all.len() > 10, "{all:#?}");
            let mut verdicts = Vec::new();
            for m in &all {
                let incremental = check(&file, m, &mut p, &mut HashSet::new(), 0).is_ok();
                let full = p.parse(lang, &m.apply(text), None).unwrap();
                let span = m.range.start..m.range.start + m.replacement.len();
                let expected = m.apply(text) != text
                    && clean(lang, &full)
                    && unique_window(&m.apply(text), span);
                assert_eq!(incremental, expected, "{m:?}");
                verdicts.push(incremental);
            }
            assert!(verdicts.contains(&true));
        }
        // The emptied Python body is caught by both.
        let py = "def f(x):\n    if x:\n        return 1\n";
        let mut p = Parsers::default();
        let tree = p.parse(Lang::Python, py, None).unwrap();
        let guard = mutations(Lang::Python, py, &tree)
            .into_iter()
            .find(|m| m.operator == Operator::Guard)
            .unwrap();
        let file = SourceFile {
            rel: "x".into(),
            lang: Lang::Python,
            bytes: py.as_bytes().to_vec(),
            bom: 0,
            tree: Some(tree),
        };
        assert_eq!(
            check(&file, &guard, &mut p, &mut HashSet::new(), 0),
            Err(Reject::Unparsable)
        );
    }

    #[test]
    fn windows_are_unique_or_not() {
        let text = "a\nb\na\nc\n";
        // "b" once; "a" twice; the deletion between "b" and "a" once.
        assert!(unique_window(text, 2..3));
        assert!(!unique_window(text, 0..1));
        assert!(unique_window(text, 4..4));
        assert!(
            !unique_window("x\n  x\n", 0..1),
            "indentation does not tell them apart"
        );
    }
}
