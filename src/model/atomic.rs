//! Replacing a file safely, for every path a caller may name.
//!
//! Invariants of [`replace_file`]:
//! - only a regular file or a missing path is replaced; a directory, device node, FIFO or
//!   socket is refused by name, and a symbolic link is followed (to the end of its chain)
//!   and the same rule applied to what it points to, which is replaced in place (the link
//!   stays a link);
//! - the bytes go to a temporary file of this call's own, in the target's directory: on
//!   Linux an unnamed `O_TMPFILE` (a process killed while writing leaves nothing behind),
//!   elsewhere, or where the file system has no `O_TMPFILE`, a new name drawn at random
//!   and created exclusively (`O_EXCL`), removed again on failure;
//! - the temporary is synced to disk (`fsync`) before it is renamed over the target, and
//!   the directory after: a reader (or a crash) sees the old file or the new one, whole,
//!   never a mixture; of concurrent saves to one path, the last rename wins, whole.
//!
//! The replaced file keeps its permission bits; a new one gets the default of a new file
//! (0o666 less the umask).

use crate::error::{io_error, Error, Result};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The longest chain of symbolic links followed (Linux's own limit).
const MAX_LINKS: usize = 40;
/// Attempts at a fresh random temporary name before giving up.
const NAME_ATTEMPTS: usize = 64;

/// Writes a file at `path` through `write`, replacing what is there whole or not at all
/// (see the module doc). `write` may be called twice (when the first temporary cannot be
/// given a name, the bytes are written again to a named one).
///
/// # Errors
/// [`Error::InvalidInput`] naming the path when it is not a regular file, or when it
/// cannot be written; what `write` returns.
pub(crate) fn replace_file(path: &Path, write: impl Fn(&mut File) -> Result<()>) -> Result<()> {
    let (target, existing) = resolve(path)?;
    let name = target.file_name().ok_or_else(|| {
        Error::InvalidInput(format!(
            "cannot write {}: the path does not name a file",
            path.display()
        ))
    })?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    #[cfg(target_os = "linux")]
    if let Some(done) = linux::replace_via_tmpfile(&dir, name, &target, existing.as_ref(), &write) {
        return done.map_err(|e| e.into_error(path));
    }
    replace_via_named(&dir, name, &target, existing.as_ref(), &write)
        .map_err(|e| e.into_error(path))
}

/// A failure while replacing: an I/O error (named with the path by the caller) or the
/// writer's own error (passed on as it is).
pub(super) enum Failure {
    Io(io::Error),
    Write(Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

impl Failure {
    fn into_error(self, path: &Path) -> Error {
        match self {
            Failure::Io(e) => io_error("write", path, &e),
            Failure::Write(e) => e,
        }
    }
}

/// The file a save to `path` replaces (symbolic links followed), with its metadata when it
/// exists; refuses anything but a regular file or a missing path.
fn resolve(path: &Path) -> Result<(PathBuf, Option<std::fs::Metadata>)> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p).map_err(|e| io_error("write", path, &e))?;
                p = match p.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            Ok(m) if m.is_file() => return Ok((p, Some(m))),
            Ok(m) => {
                let what = if p == path {
                    "it is".to_string()
                } else {
                    format!("it links to {}, which is", p.display())
                };
                return Err(Error::InvalidInput(format!(
                    "cannot write {}: {what} {}, not a regular file; a model is saved only \
                     over a regular file or to a new path",
                    path.display(),
                    kind_of(&m.file_type())
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((p, None)),
            Err(e) => return Err(io_error("write", path, &e)),
        }
    }
    Err(Error::InvalidInput(format!(
        "cannot write {}: more than {MAX_LINKS} symbolic links in a chain",
        path.display()
    )))
}

/// What a file that is not a regular file is, in words.
fn kind_of(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// A name for a temporary next to `name` that no other call draws: a hidden name with 64
/// random bits (from the standard library's randomly keyed hasher, with the process id, a
/// counter and the time mixed in).
fn temporary_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let mut out = std::ffi::OsString::from(".");
    out.push(name);
    out.push(format!(".{:016x}.tmp", h.finish()));
    out
}

/// Gives the temporary the permission bits of the file it replaces.
fn keep_permissions(file: &File, existing: Option<&std::fs::Metadata>) -> io::Result<()> {
    match existing {
        Some(m) => file.set_permissions(m.permissions()),
        None => Ok(()),
    }
}

/// Syncs the directory, so that the rename itself survives a crash (best effort: not every
/// platform can open a directory).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The portable way: a new randomly named file created exclusively in `dir`, written,
/// synced and renamed over `target`; removed again on any failure.
fn replace_via_named(
    dir: &Path,
    name: &std::ffi::OsStr,
    target: &Path,
    existing: Option<&std::fs::Metadata>,
    write: &impl Fn(&mut File) -> Result<()>,
) -> std::result::Result<(), Failure> {
    let mut attempts = 0;
    let (tmp, mut file) = loop {
        let tmp = dir.join(temporary_name(name));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < NAME_ATTEMPTS => {
                attempts += 1;
            }
            Err(e) => return Err(e.into()),
        }
    };
    let result = write(&mut file)
        .map_err(Failure::Write)
        .and_then(|()| Ok(keep_permissions(&file, existing)?))
        .and_then(|()| Ok(file.sync_all()?))
        .and_then(|()| {
            drop(file);
            Ok(std::fs::rename(&tmp, target)?)
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    } else {
        sync_dir(dir);
    }
    result
}

#[cfg(target_os = "linux")]
mod linux {
    //! `O_TMPFILE`: an unnamed file in the target's directory, named (`linkat`) only once
    //! it is complete and synced, then renamed over the target.

    use super::{keep_permissions, sync_dir, temporary_name, Failure, NAME_ATTEMPTS};
    use crate::error::Result;
    use std::ffi::{CString, OsStr};
    use std::fs::File;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::{AsRawFd, FromRawFd};
    use std::path::Path;

    fn c_path(p: &Path) -> io::Result<CString> {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))
    }

    /// An unnamed file in `dir`, or `None` where the file system (or kernel) has no
    /// `O_TMPFILE`, or it cannot be used for another reason (the named way then says why).
    fn open_tmpfile(dir: &Path) -> Option<File> {
        let dir = c_path(dir).ok()?;
        // SAFETY: a valid NUL-terminated path; the descriptor is owned by the File below
        let fd = unsafe {
            libc::open(
                dir.as_ptr(),
                libc::O_TMPFILE | libc::O_WRONLY | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns
        Some(unsafe { File::from_raw_fd(fd) })
    }

    /// Gives the unnamed `file` the name `to` (which must not exist).
    fn link(file: &File, to: &Path) -> io::Result<()> {
        let to = c_path(to)?;
        let proc_path = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| io::Error::other("descriptor path"))?;
        // SAFETY: valid NUL-terminated paths
        let r = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc_path.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::AlreadyExists {
            return Err(err);
        }
        // without /proc: linking the descriptor itself (needs CAP_DAC_READ_SEARCH)
        let empty = CString::default();
        // SAFETY: a valid descriptor and NUL-terminated paths
        let r = unsafe {
            libc::linkat(
                file.as_raw_fd(),
                empty.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(err)
        }
    }

    /// Replaces `target` through an `O_TMPFILE` in `dir`; `None` when that is not
    /// available here (or the finished file cannot be named), so that the caller takes the
    /// named way.
    pub(super) fn replace_via_tmpfile(
        dir: &Path,
        name: &OsStr,
        target: &Path,
        existing: Option<&std::fs::Metadata>,
        write: &impl Fn(&mut File) -> Result<()>,
    ) -> Option<std::result::Result<(), Failure>> {
        let mut file = open_tmpfile(dir)?;
        if let Err(e) = write(&mut file) {
            return Some(Err(Failure::Write(e)));
        }
        if let Err(e) = keep_permissions(&file, existing).and_then(|()| file.sync_all()) {
            return Some(Err(e.into()));
        }
        for _ in 0..NAME_ATTEMPTS {
            let tmp = dir.join(temporary_name(name));
            match link(&file, &tmp) {
                Ok(()) => {
                    drop(file);
                    let renamed = std::fs::rename(&tmp, target);
                    if renamed.is_err() {
                        let _ = std::fs::remove_file(&tmp);
                    } else {
                        sync_dir(dir);
                    }
                    return Some(renamed.map_err(Failure::from));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(_) => return None,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::io::Write;

    fn scratch_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "obliqueforest-atomic-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn bytes(b: &'static [u8]) -> impl Fn(&mut File) -> Result<()> {
        move |f: &mut File| {
            f.write_all(b)
                .map_err(|e| Error::InvalidInput(e.to_string()))
        }
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_a_regular_file_and_creates_a_missing_one() {
        let d = scratch_dir("plain");
        let p = d.join("m.of");
        replace_file(&p, bytes(b"one")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        replace_file(&p, bytes(b"two")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(entries(&d), ["m.of"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_named_way_leaves_no_temporary_and_keeps_the_target_on_failure() {
        let d = scratch_dir("named");
        let p = d.join("m.of");
        replace_via_named(&d, OsStr::new("m.of"), &p, None, &bytes(b"one"))
            .map_err(|e| e.into_error(&p))
            .unwrap();
        let failing = |f: &mut File| -> Result<()> {
            f.write_all(b"half").unwrap();
            Err(Error::Cancelled)
        };
        let meta = std::fs::metadata(&p).unwrap();
        let err = replace_via_named(&d, OsStr::new("m.of"), &p, Some(&meta), &failing)
            .map_err(|e| e.into_error(&p))
            .unwrap_err();
        assert_eq!(err, Error::Cancelled);
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        assert_eq!(entries(&d), ["m.of"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn refuses_what_is_not_a_regular_file_and_follows_links() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let d = scratch_dir("kinds");
        let err = replace_file(&d, bytes(b"x")).unwrap_err().to_string();
        assert!(err.contains("a directory"), "{err}");
        if Path::new("/dev/null").exists() {
            let err = replace_file(Path::new("/dev/null"), bytes(b"x"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("character device") && err.contains("/dev/null"),
                "{err}"
            );
        }
        // a link to a device is refused; a link to a file replaces the file, not the link
        let to_dev = d.join("dev");
        symlink("/dev/null", &to_dev).unwrap();
        assert!(replace_file(&to_dev, bytes(b"x")).is_err());
        let real = d.join("real.of");
        std::fs::write(&real, b"old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.join("link.of");
        symlink("real.of", &link).unwrap();
        replace_file(&link, bytes(b"new")).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        // a dangling link creates what it points to
        let dangling = d.join("dangling.of");
        symlink("made.of", &dangling).unwrap();
        replace_file(&dangling, bytes(b"made")).unwrap();
        assert_eq!(std::fs::read(d.join("made.of")).unwrap(), b"made");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn concurrent_replacements_leave_one_whole_file() {
        let d = scratch_dir("threads");
        let p = d.join("m.of");
        let contents: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 1 << 16]).collect();
        std::thread::scope(|s| {
            for c in &contents {
                let p = &p;
                s.spawn(move || {
                    for _ in 0..20 {
                        replace_file(p, |f: &mut File| {
                            f.write_all(c)
                                .map_err(|e| Error::InvalidInput(e.to_string()))
                        })
                        .unwrap();
                    }
                });
            }
        });
        let got = std::fs::read(&p).unwrap();
        assert!(contents.contains(&got));
        assert_eq!(entries(&d), ["m.of"]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
