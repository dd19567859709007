//! The directory of a durable state store, and the checks that run before
//! fjall is allowed to touch it.
//!
//! ```text
//! <dir>/FORMAT_VERSION   "ebbflow state store format <n>\n", written last at creation
//! <dir>/LOCK             exclusive advisory lock (flock) held while open
//! <dir>/fjall/           the fjall database (its own `version` marker, journals,
//!                        `keyspaces/`)
//! ```
//!
//! Invariant: a directory with a `FORMAT_VERSION` file is a complete store.
//! Creation writes everything else first and `FORMAT_VERSION` last (write
//! to a temporary name, fsync, rename, fsync the directory), so a crash
//! during creation leaves a directory without it, which [`open_dir`]
//! refuses rather than guesses about.
//!
//! Every check here is read-only: a store from another format version, a
//! directory that is not a store, or one another process holds is
//! reported with its path and left exactly as it was. Damage inside the
//! fjall database (a truncated or corrupt table or journal) is found by
//! fjall itself: a damaged table makes open fail (or, for a corrupt data
//! block, the read of that block fail on its checksum) with an error
//! naming the store; before failing, fjall may already have deleted
//! superseded manifest files (`keyspaces/<id>/v<n>`) of keyspaces it
//! recovered — never data. fjall truncates an incomplete batch at the
//! journal's tail, which is the expected state after a crash mid-commit
//! (that commit never returned).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::storage::StorageError;

/// The on-disk format this build reads and writes. Bump it on any change
/// to the key layout, the `meta` keyspace or the fjall major version.
pub const FORMAT_VERSION: u32 = 1;

pub const VERSION_FILE: &str = "FORMAT_VERSION";
pub const LOCK_FILE: &str = "LOCK";
pub const FJALL_DIR: &str = "fjall";
const VERSION_PREFIX: &str = "ebbflow state store format ";

/// Whether [`open_dir`] found an existing store or must create one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirState {
    Existing,
    New,
}

/// An open, locked store directory. The lock lives as long as this value.
pub struct LockedDir {
    pub root: PathBuf,
    pub state: DirState,
    /// Held with an exclusive `flock` until dropped (the OS releases it if
    /// the process dies, so a crash never leaves a stale lock).
    _lock: File,
}

impl LockedDir {
    pub fn fjall_path(&self) -> PathBuf {
        self.root.join(FJALL_DIR)
    }
}

pub fn err(path: &Path, what: impl std::fmt::Display) -> StorageError {
    StorageError::Io(format!("state store at {}: {what}", path.display()))
}

/// Validates `root` read-only, then takes its lock. Creates `root` (and
/// only the lock file in it) if it does not exist or is empty.
pub fn open_dir(root: &Path) -> Result<LockedDir, StorageError> {
    let state = match fs::metadata(root) {
        Ok(m) if !m.is_dir() => return Err(err(root, "exists and is not a directory")),
        Ok(_) => inspect_existing(root)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => DirState::New,
        Err(e) => return Err(err(root, format_args!("cannot read directory: {e}"))),
    };
    if state == DirState::New {
        fs::create_dir_all(root).map_err(|e| err(root, format_args!("cannot create: {e}")))?;
    }
    let lock = lock(root)?;
    if state == DirState::Existing {
        check_fjall_dir(root)?;
    }
    Ok(LockedDir {
        root: root.to_path_buf(),
        state,
        _lock: lock,
    })
}

/// An existing directory is either a store (has `FORMAT_VERSION` of our
/// version) or empty apart from a lock file (a fresh data dir).
fn inspect_existing(root: &Path) -> Result<DirState, StorageError> {
    let version_path = root.join(VERSION_FILE);
    match fs::read(&version_path) {
        Ok(bytes) => {
            check_version(&version_path, &bytes)?;
            Ok(DirState::Existing)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let entries = fs::read_dir(root)
                .map_err(|e| err(root, format_args!("cannot list directory: {e}")))?;
            for entry in entries {
                let entry = entry.map_err(|e| err(root, format_args!("cannot list: {e}")))?;
                if entry.file_name() != LOCK_FILE {
                    return Err(err(
                        root,
                        format_args!(
                            "not an ebbflow state store: {} is missing but the directory \
                             is not empty (found {:?}); a store whose creation was \
                             interrupted can be removed",
                            version_path.display(),
                            entry.file_name()
                        ),
                    ));
                }
            }
            Ok(DirState::New)
        }
        Err(e) => Err(err(
            &version_path,
            format_args!("cannot read format version: {e}"),
        )),
    }
}

fn check_version(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    let found = std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.strip_prefix(VERSION_PREFIX))
        .and_then(|s| s.trim_end().parse::<u32>().ok());
    match found {
        Some(FORMAT_VERSION) => Ok(()),
        Some(v) => Err(err(
            path,
            format_args!(
                "format version {v} found, this build reads version {FORMAT_VERSION} \
                 (use the ebbflow build that wrote it, or a new data directory)"
            ),
        )),
        None => Err(err(
            path,
            format_args!(
                "corrupt format version file: expected \"{VERSION_PREFIX}{FORMAT_VERSION}\", \
                 found {:?}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(64)])
            ),
        )),
    }
}

/// Read-only sanity checks of the fjall database before fjall opens it
/// (fjall's own recovery may truncate a torn journal tail, which is right
/// after a crash but should not happen to a directory that is not one).
fn check_fjall_dir(root: &Path) -> Result<(), StorageError> {
    let fjall = root.join(FJALL_DIR);
    for (path, what) in [
        (fjall.clone(), "fjall database directory"),
        (fjall.join("keyspaces"), "fjall keyspaces directory"),
    ] {
        match fs::metadata(&path) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(err(&path, format_args!("{what} is not a directory"))),
            Err(e) => {
                return Err(err(
                    &path,
                    format_args!("{what} is missing or unreadable ({e}): the store is corrupt"),
                ))
            }
        }
    }
    let marker = fjall.join("version");
    match fs::read(&marker) {
        Ok(b) if b.starts_with(b"FJL") => Ok(()),
        Ok(_) => Err(err(&marker, "corrupt fjall version marker")),
        Err(e) => Err(err(
            &marker,
            format_args!(
                "fjall version marker is missing or unreadable ({e}): the store is corrupt"
            ),
        )),
    }
}

fn lock(root: &Path) -> Result<File, StorageError> {
    let path = root.join(LOCK_FILE);
    // No truncate: opening must not change an existing file.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| err(&path, format_args!("cannot open lock file: {e}")))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(err(
            &path,
            "locked by another process (is another ebbflow running on this data directory?)",
        )),
        Err(TryLockError::Error(e)) => Err(err(&path, format_args!("cannot lock: {e}"))),
    }
}

/// Writes `FORMAT_VERSION` atomically and durably; called once the rest of
/// a new store is in place.
pub fn write_version(root: &Path) -> Result<(), StorageError> {
    let tmp = root.join(format!("{VERSION_FILE}.tmp"));
    let path = root.join(VERSION_FILE);
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(format!("{VERSION_PREFIX}{FORMAT_VERSION}\n").as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &path)?;
        File::open(root)?.sync_all()
    };
    write().map_err(|e| err(&path, format_args!("cannot write format version: {e}")))
}
