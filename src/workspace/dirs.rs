//! Directory handles: every file lancet reads or writes under the root is
//! reached from an open directory, one name at a time, never by a path string
//! the operating system walks again.
//!
//! A [`Dir`] is an open directory. [`Dir::open_dir`] opens a child directory
//! without following a symlink (`openat` with `O_NOFOLLOW | O_DIRECTORY`), so
//! a walk from the root's handle either reaches real directories or fails; a
//! directory swapped for a symlink between two steps cannot redirect it.
//! Files are opened, created, renamed and removed relative to the handle of
//! the directory that holds them (`openat`, `renameat`, `unlinkat`), and their
//! type is checked with `fstatat(AT_SYMLINK_NOFOLLOW)` before anything opens them.
//!
//! Owns: the system calls (through `rustix`) and the [`Meta`] they report.
//! Does not own: which names may be used (the workspace) or what is written.
//!
//! Invariant: no function here follows a symlink in the name it is given.
//! Elsewhere than unix the same interface works on paths, as well as std allows.

use std::ffi::OsString;
use std::fs::File;
use std::io;

/// What a name in a directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (not followed).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Something else.
    Other,
}

impl FileKind {
    /// A few words naming the kind: "a symlink", "a named pipe (FIFO)".
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symlink",
            FileKind::Fifo => "a named pipe (FIFO)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "a special file",
        }
    }
}

/// What `fstat` says about a file: its kind, permissions, owner and identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) kind: FileKind,
    /// Permission bits (`st_mode & 0o7777`).
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    /// Modification time: seconds and nanoseconds.
    pub(crate) mtime: (i64, u64),
    /// How many names the file has (1 where the platform does not say).
    pub(crate) nlink: u64,
}

impl Meta {
    /// Device, inode, size and modification time: what says "the same file,
    /// untouched" short of reading it.
    pub(crate) fn identity(&self) -> (u64, u64, u64, (i64, u64)) {
        (self.dev, self.ino, self.size, self.mtime)
    }
}

#[cfg(unix)]
pub(crate) use unix::Dir;

#[cfg(not(unix))]
pub(crate) use portable::Dir;

/// Opens a file given by a path (followed, as a person means it) for reading,
/// refusing anything that is not a regular file before reading a byte.
pub(crate) fn open_regular(path: &std::path::Path) -> io::Result<(File, Meta)> {
    #[cfg(unix)]
    {
        unix::open_regular(path)
    }
    #[cfg(not(unix))]
    {
        portable::open_regular(path)
    }
}

/// The kind of a file std's metadata describes.
pub(crate) fn kind_of(t: &std::fs::FileType) -> FileKind {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return FileKind::Fifo;
        }
        if t.is_socket() {
            return FileKind::Socket;
        }
        if t.is_char_device() {
            return FileKind::CharDevice;
        }
        if t.is_block_device() {
            return FileKind::BlockDevice;
        }
    }
    if t.is_symlink() {
        FileKind::Symlink
    } else if t.is_dir() {
        FileKind::Directory
    } else if t.is_file() {
        FileKind::Regular
    } else {
        FileKind::Other
    }
}

/// The entries of a directory listing, without `.` and `..`.
pub(crate) type Names = Vec<OsString>;

/// The entries of a directory listing with their kinds as the listing itself
/// gives them (`d_type`, never following a symlink; `None` where the file
/// system does not say), without `.` and `..`.
pub(crate) type Kinds = Vec<(OsString, Option<FileKind>)>;

#[cfg(unix)]
mod unix {
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::Path;

    use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};

    use super::{FileKind, Kinds, Meta, Names};

    /// An open directory.
    #[derive(Debug)]
    pub(crate) struct Dir {
        fd: OwnedFd,
    }

    fn kind(mode: u32) -> FileKind {
        type_kind(FileType::from_raw_mode(mode as _))
    }

    fn type_kind(t: FileType) -> FileKind {
        match t {
            FileType::RegularFile => FileKind::Regular,
            FileType::Directory => FileKind::Directory,
            FileType::Symlink => FileKind::Symlink,
            FileType::Fifo => FileKind::Fifo,
            FileType::Socket => FileKind::Socket,
            FileType::CharacterDevice => FileKind::CharDevice,
            FileType::BlockDevice => FileKind::BlockDevice,
            _ => FileKind::Other,
        }
    }

    // The field types of `struct stat` differ between platforms (`c_ulong`,
    // `u64`, `i64`), so the conversions are casts, some of them no-ops here.
    #[allow(clippy::unnecessary_cast)]
    fn meta(st: &rfs::Stat) -> Meta {
        Meta {
            kind: kind(st.st_mode as u32),
            mode: st.st_mode as u32 & 0o7777,
            uid: st.st_uid as u32,
            gid: st.st_gid as u32,
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as u64),
            nlink: st.st_nlink as u64,
        }
    }

    /// Flags every open shares: no descriptor leaks into a child process.
    const BASE: OFlags = OFlags::CLOEXEC;

    pub(crate) fn open_regular(path: &Path) -> io::Result<(File, Meta)> {
        let fd = rfs::open(
            path,
            BASE | OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )?;
        let m = meta(&rfs::fstat(&fd)?);
        if m.kind != FileKind::Regular {
            return Err(not_regular(m.kind));
        }
        Ok((File::from(fd), m))
    }

    /// The error for a name that is not the kind of file asked for.
    fn not_regular(kind: FileKind) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidInput, kind.describe())
    }

    impl Dir {
        /// Opens a directory by path (the workspace root, already canonical).
        pub(crate) fn open_path(path: &Path) -> io::Result<Dir> {
            let fd = rfs::open(
                path,
                BASE | OFlags::RDONLY | OFlags::DIRECTORY,
                Mode::empty(),
            )?;
            Ok(Dir { fd })
        }

        /// This directory opened again: a new open file, so an advisory lock
        /// on it is separate from one on this handle.
        pub(crate) fn reopen(&self) -> io::Result<Dir> {
            let fd = rfs::openat(
                &self.fd,
                c".",
                BASE | OFlags::RDONLY | OFlags::DIRECTORY,
                Mode::empty(),
            )?;
            Ok(Dir { fd })
        }

        /// Tries to take the exclusive advisory lock on this directory without waiting.
        pub(crate) fn try_lock(&self) -> io::Result<bool> {
            use rustix::io::Errno;
            match rfs::flock(&self.fd, rfs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => Ok(true),
                Err(Errno::WOULDBLOCK) => Ok(false),
                // A file system without advisory locks (some network mounts):
                // lancet still works there, guarded by the identity checks
                // before every rename, as it is where it cannot lock at all.
                Err(Errno::NOLCK | Errno::OPNOTSUPP | Errno::INVAL) => Ok(true),
                Err(e) => Err(e.into()),
            }
        }

        /// Opens the child directory `name`; a symlink or a file there fails
        /// (`ELOOP`, `ENOTDIR`).
        pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
            let flags = BASE | OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
            let fd = rfs::openat(&self.fd, name, flags, Mode::empty())?;
            Ok(Dir { fd })
        }

        /// Creates the child directory `name` with `mode` (before the umask).
        pub(crate) fn make_dir(&self, name: &OsStr, mode: u32) -> io::Result<()> {
            rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode as _))?;
            Ok(())
        }

        /// What `name` is, without following it; `None` when it does not exist.
        pub(crate) fn stat(&self, name: &OsStr) -> io::Result<Option<Meta>> {
            match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => Ok(Some(meta(&st))),
                Err(rustix::io::Errno::NOENT) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }

        /// This directory's own metadata.
        pub(crate) fn meta(&self) -> io::Result<Meta> {
            Ok(meta(&rfs::fstat(&self.fd)?))
        }

        /// Opens the regular file `name` for reading. Checked before opening
        /// (a FIFO would block, a device would never end) and again after, on
        /// the descriptor itself.
        pub(crate) fn open_read(&self, name: &OsStr) -> io::Result<(File, Meta)> {
            if let Some(m) = self.stat(name)?
                && m.kind != FileKind::Regular
            {
                return Err(not_regular(m.kind));
            }
            self.open_read_seen(name)
        }

        /// [`open_read`](Self::open_read) for a caller that has just looked
        /// at `name` (`stat`) and seen a regular file: not looked at by name
        /// again, only checked on the descriptor. The window in which a swap
        /// could put a device there is the one `open_read` has between its
        /// own look and the open.
        pub(crate) fn open_read_seen(&self, name: &OsStr) -> io::Result<(File, Meta)> {
            let flags =
                BASE | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
            let fd = rfs::openat(&self.fd, name, flags, Mode::empty())?;
            let m = meta(&rfs::fstat(&fd)?);
            if m.kind != FileKind::Regular {
                return Err(not_regular(m.kind));
            }
            Ok((File::from(fd), m))
        }

        /// Creates the new file `name` (never an existing one, never through a
        /// symlink) for writing, with `mode` (before the umask).
        pub(crate) fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
            let flags = BASE | OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
            let fd = rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode as _))?;
            Ok(File::from(fd))
        }

        /// Opens `name` for appending, creating it with `mode` when missing;
        /// a symlink or anything but a regular file is refused.
        pub(crate) fn open_append(
            &self,
            name: &OsStr,
            mode: u32,
            create: bool,
        ) -> io::Result<File> {
            let mut flags =
                BASE | OFlags::WRONLY | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::NONBLOCK;
            if create {
                flags |= OFlags::CREATE;
            }
            let fd = rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode as _))?;
            let m = meta(&rfs::fstat(&fd)?);
            if m.kind != FileKind::Regular {
                return Err(not_regular(m.kind));
            }
            Ok(File::from(fd))
        }

        /// Renames `from` in this directory to `to` in `dest`, replacing it.
        pub(crate) fn rename(&self, from: &OsStr, dest: &Dir, to: &OsStr) -> io::Result<()> {
            rfs::renameat(&self.fd, from, &dest.fd, to)?;
            Ok(())
        }

        /// Removes the file (or symlink) `name`; never follows it.
        pub(crate) fn unlink(&self, name: &OsStr) -> io::Result<()> {
            rfs::unlinkat(&self.fd, name, AtFlags::empty())?;
            Ok(())
        }

        /// Renames `from` in this directory to `to` in `dest`, never over
        /// anything already there (`renameat2` with `RENAME_NOREPLACE`);
        /// `Unsupported` where the system or the file system has no such rename.
        pub(crate) fn rename_noreplace(
            &self,
            from: &OsStr,
            dest: &Dir,
            to: &OsStr,
        ) -> io::Result<()> {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            {
                match rfs::renameat_with(&self.fd, from, &dest.fd, to, rfs::RenameFlags::NOREPLACE)
                {
                    Ok(()) => Ok(()),
                    Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
                        Err(io::ErrorKind::Unsupported.into())
                    }
                    Err(e) => Err(e.into()),
                }
            }
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            {
                let _ = (from, dest, to);
                Err(io::ErrorKind::Unsupported.into())
            }
        }

        /// Opens the existing regular file `name` for writing in place (no
        /// truncation, never created, never through a symlink) and says what
        /// it is (its descriptor's `fstat`); anything but a regular file is refused.
        pub(crate) fn open_write_existing(&self, name: &OsStr) -> io::Result<(File, Meta)> {
            let flags =
                BASE | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
            let fd = rfs::openat(&self.fd, name, flags, Mode::empty())?;
            let m = meta(&rfs::fstat(&fd)?);
            if m.kind != FileKind::Regular {
                return Err(not_regular(m.kind));
            }
            Ok((File::from(fd), m))
        }

        /// Gives the file `from` in `src` a second name, `to` in this
        /// directory (`linkat` without `AT_SYMLINK_FOLLOW`: a symlink at
        /// `from` is linked as itself, never followed).
        pub(crate) fn link_from(&self, src: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
            rfs::linkat(&src.fd, from, &self.fd, to, AtFlags::empty())?;
            Ok(())
        }

        /// Removes the empty directory `name`.
        pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
            rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?;
            Ok(())
        }

        /// The names in this directory.
        pub(crate) fn names(&self) -> io::Result<Names> {
            use std::os::unix::ffi::OsStrExt;
            let mut out = Vec::new();
            for entry in rfs::Dir::read_from(&self.fd)? {
                let entry = entry?;
                let name = entry.file_name().to_bytes();
                if name != b"." && name != b".." {
                    out.push(OsStr::from_bytes(name).to_owned());
                }
            }
            Ok(out)
        }

        /// The names in this directory with the kinds the listing gives
        /// (see [`Kinds`]): no `fstatat` per name.
        pub(crate) fn kinds(&self) -> io::Result<Kinds> {
            use std::os::unix::ffi::OsStrExt;
            let mut out = Vec::new();
            for entry in rfs::Dir::read_from(&self.fd)? {
                let entry = entry?;
                let name = entry.file_name().to_bytes();
                if name != b"." && name != b".." {
                    let kind = match entry.file_type() {
                        FileType::Unknown => None,
                        t => Some(type_kind(t)),
                    };
                    out.push((OsStr::from_bytes(name).to_owned(), kind));
                }
            }
            Ok(out)
        }

        /// What the relative path `rel` is, its last name not followed;
        /// `None` when it (or a directory on it) does not exist. Unlike
        /// [`stat`](Self::stat), the names before the last are followed: only
        /// for a lookup whose every shorter prefix was just found to be a
        /// real directory, and whose answer either a walk through
        /// [`open_dir`] checks again before anything is opened, or decides
        /// nothing that is opened, or is only compared with the identity of
        /// a directory already held open (a difference refuses; sameness
        /// lets the held handle be used) (one system call instead of an open
        /// per directory).
        pub(crate) fn stat_beneath(&self, rel: &Path) -> io::Result<Option<Meta>> {
            match rfs::statat(&self.fd, rel, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => Ok(Some(meta(&st))),
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }

        /// Sets this directory's permission bits.
        pub(crate) fn set_mode(&self, mode: u32) -> io::Result<()> {
            rfs::fchmod(&self.fd, Mode::from_raw_mode(mode as _))?;
            Ok(())
        }
    }

    /// Gives `file` the owner and group `uid`/`gid` as far as this process may:
    /// root may give any; others may at most change the group to one of theirs.
    /// What cannot be kept is left as the system made it.
    pub(crate) fn keep_owner(file: &File, uid: u32, gid: u32) {
        use rustix::fs::{Gid, Uid};
        let Ok(now) = rfs::fstat(file) else {
            return;
        };
        let now = meta(&now);
        if (now.uid, now.gid) == (uid, gid) {
            return;
        }
        let (u, g) = (Uid::from_raw(uid as _), Gid::from_raw(gid as _));
        if rfs::fchown(file.as_fd(), Some(u), Some(g)).is_err() {
            let _ = rfs::fchown(file.as_fd(), None, Some(g));
        }
    }

    /// Sets `file`'s permission bits.
    pub(crate) fn set_mode(file: &File, mode: u32) -> io::Result<()> {
        rfs::fchmod(file.as_fd(), Mode::from_raw_mode(mode as _))?;
        Ok(())
    }
}

#[cfg(unix)]
pub(crate) use unix::{keep_owner, set_mode};

/// Elsewhere than unix: the same interface over paths. Symlinks are rare
/// there and need privileges to create; std's metadata calls do not follow them.
#[cfg(not(unix))]
mod portable {
    use std::ffi::OsStr;
    use std::fs::{self, File, OpenOptions};
    use std::io;
    use std::path::{Path, PathBuf};

    use super::{FileKind, Kinds, Meta, Names};

    /// An open directory (its path).
    #[derive(Debug)]
    pub(crate) struct Dir {
        path: PathBuf,
    }

    fn meta_kind(t: &fs::FileType) -> FileKind {
        if t.is_symlink() {
            FileKind::Symlink
        } else if t.is_dir() {
            FileKind::Directory
        } else if t.is_file() {
            FileKind::Regular
        } else {
            FileKind::Other
        }
    }

    fn meta(m: &fs::Metadata) -> Meta {
        let kind = meta_kind(&m.file_type());
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or((0, 0), |d| {
                (d.as_secs() as i64, u64::from(d.subsec_nanos()))
            });
        Meta {
            kind,
            mode: if m.permissions().readonly() {
                0o444
            } else {
                0o644
            },
            uid: 0,
            gid: 0,
            dev: 0,
            ino: 0,
            size: m.len(),
            mtime,
            nlink: 1,
        }
    }

    fn not_regular(kind: FileKind) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidInput, kind.describe())
    }

    pub(crate) fn open_regular(path: &Path) -> io::Result<(File, Meta)> {
        let m = meta(&fs::metadata(path)?);
        if m.kind != FileKind::Regular {
            return Err(not_regular(m.kind));
        }
        Ok((File::open(path)?, m))
    }

    impl Dir {
        pub(crate) fn open_path(path: &Path) -> io::Result<Dir> {
            if !fs::metadata(path)?.is_dir() {
                return Err(io::ErrorKind::NotADirectory.into());
            }
            Ok(Dir {
                path: path.to_path_buf(),
            })
        }

        pub(crate) fn try_clone(&self) -> io::Result<Dir> {
            Ok(Dir {
                path: self.path.clone(),
            })
        }

        pub(crate) fn reopen(&self) -> io::Result<Dir> {
            self.try_clone()
        }

        /// No advisory locks here: the identity checks before each rename remain.
        pub(crate) fn try_lock(&self) -> io::Result<bool> {
            Ok(true)
        }

        pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
            let path = self.path.join(name);
            let m = fs::symlink_metadata(&path)?;
            if !m.file_type().is_dir() || m.file_type().is_symlink() {
                return Err(io::ErrorKind::NotADirectory.into());
            }
            Ok(Dir { path })
        }

        pub(crate) fn make_dir(&self, name: &OsStr, _mode: u32) -> io::Result<()> {
            fs::create_dir(self.path.join(name))
        }

        pub(crate) fn stat(&self, name: &OsStr) -> io::Result<Option<Meta>> {
            match fs::symlink_metadata(self.path.join(name)) {
                Ok(m) => Ok(Some(meta(&m))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        }

        pub(crate) fn meta(&self) -> io::Result<Meta> {
            Ok(meta(&fs::metadata(&self.path)?))
        }

        pub(crate) fn open_read(&self, name: &OsStr) -> io::Result<(File, Meta)> {
            match self.stat(name)? {
                Some(m) if m.kind == FileKind::Regular => {
                    Ok((File::open(self.path.join(name))?, m))
                }
                Some(m) => Err(not_regular(m.kind)),
                None => Err(io::ErrorKind::NotFound.into()),
            }
        }

        pub(crate) fn open_read_seen(&self, name: &OsStr) -> io::Result<(File, Meta)> {
            self.open_read(name)
        }

        pub(crate) fn create_new(&self, name: &OsStr, _mode: u32) -> io::Result<File> {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.path.join(name))
        }

        pub(crate) fn open_append(
            &self,
            name: &OsStr,
            _mode: u32,
            create: bool,
        ) -> io::Result<File> {
            if let Some(m) = self.stat(name)? {
                if m.kind != FileKind::Regular {
                    return Err(not_regular(m.kind));
                }
            }
            OpenOptions::new()
                .append(true)
                .create(create)
                .open(self.path.join(name))
        }

        pub(crate) fn rename(&self, from: &OsStr, dest: &Dir, to: &OsStr) -> io::Result<()> {
            fs::rename(self.path.join(from), dest.path.join(to))
        }

        pub(crate) fn unlink(&self, name: &OsStr) -> io::Result<()> {
            fs::remove_file(self.path.join(name))
        }

        /// No rename that refuses an existing name here: the journal makes a
        /// new entry instead.
        pub(crate) fn rename_noreplace(
            &self,
            _from: &OsStr,
            _dest: &Dir,
            _to: &OsStr,
        ) -> io::Result<()> {
            Err(io::ErrorKind::Unsupported.into())
        }

        /// Opens the existing regular file `name` for writing in place.
        pub(crate) fn open_write_existing(&self, name: &OsStr) -> io::Result<(File, Meta)> {
            let path = self.path.join(name);
            let m = meta(&fs::symlink_metadata(&path)?);
            if m.kind != FileKind::Regular {
                return Err(not_regular(m.kind));
            }
            Ok((fs::OpenOptions::new().write(true).open(path)?, m))
        }

        /// Hard links are not used here: the journal copies instead.
        pub(crate) fn link_from(&self, _src: &Dir, _from: &OsStr, _to: &OsStr) -> io::Result<()> {
            Err(io::ErrorKind::Unsupported.into())
        }

        pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
            fs::remove_dir(self.path.join(name))
        }

        pub(crate) fn names(&self) -> io::Result<Names> {
            let mut out = Vec::new();
            for entry in fs::read_dir(&self.path)? {
                out.push(entry?.file_name());
            }
            Ok(out)
        }

        pub(crate) fn kinds(&self) -> io::Result<Kinds> {
            let mut out = Vec::new();
            for entry in fs::read_dir(&self.path)? {
                let entry = entry?;
                // Not followed: the entry's own type.
                let kind = entry.file_type().ok().map(|t| meta_kind(&t));
                out.push((entry.file_name(), kind));
            }
            Ok(out)
        }

        pub(crate) fn stat_beneath(&self, rel: &Path) -> io::Result<Option<Meta>> {
            match fs::symlink_metadata(self.path.join(rel)) {
                Ok(m) => Ok(Some(meta(&m))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        }

        pub(crate) fn set_mode(&self, _mode: u32) -> io::Result<()> {
            Ok(())
        }
    }

    pub(crate) fn keep_owner(_file: &File, _uid: u32, _gid: u32) {}

    pub(crate) fn set_mode(file: &File, mode: u32) -> io::Result<()> {
        let mut p = file.metadata()?.permissions();
        p.set_readonly(mode & 0o200 == 0);
        file.set_permissions(p)
    }
}

#[cfg(not(unix))]
pub(crate) use portable::{keep_owner, set_mode};

#[cfg(all(test, unix))]
mod tests {
    use std::ffi::OsStr;
    use std::fs;
    use std::io::Write;
    use std::os::unix::fs::symlink;

    use super::Dir;

    /// Security item 4: a new file (a temp file, a journal copy or
    /// manifest) is created exclusively: never over an existing file, never
    /// through a symlink, dangling or not; nothing is written anywhere then.
    #[test]
    fn create_new_is_exclusive_and_never_follows() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, b"keep\n").unwrap();
        fs::write(root.path().join("there"), b"mine\n").unwrap();
        symlink(&victim, root.path().join("link")).unwrap();
        symlink(outside.path().join("absent"), root.path().join("dangling")).unwrap();
        let dir = Dir::open_path(root.path()).unwrap();
        for name in ["there", "link", "dangling"] {
            let made = dir.create_new(OsStr::new(name), 0o600);
            assert!(made.is_err(), "{name}");
        }
        assert_eq!(fs::read(root.path().join("there")).unwrap(), b"mine\n");
        assert_eq!(fs::read(&victim).unwrap(), b"keep\n");
        assert!(!outside.path().join("absent").exists());
        let mut f = dir.create_new(OsStr::new("new"), 0o600).unwrap();
        f.write_all(b"new\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(root.path().join("new"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0);
    }
}
