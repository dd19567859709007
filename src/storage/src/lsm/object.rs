//! Where state files live: an object store reached through the
//! `object_store` crate, named by a URL.
//!
//! - `file:///dir`: a local directory (the embedded default). Files are
//!   written with `fsync` on the file and its directory, so an upload that
//!   returned survives a crash.
//! - `s3://bucket/prefix`: an S3-compatible service, configured by the usual
//!   `AWS_*` variables (`AWS_ENDPOINT`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP=true` for a local server).
//!
//! Every state file is written once with `PutMode::Create` (a conditional
//! put), so two writers that picked the same name can never overwrite each
//! other's file: the second one gets `AlreadyExists` and picks another.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
};

use crate::{StorageError, StorageResult};

/// Folder of the state files under the store's root.
const SST_DIR: &str = "sst";

/// How long a read of a state file retries transient faults.
pub const READ_RETRY_FOR: Duration = Duration::from_secs(30);

/// The object store holding state files, and the root they live under.
#[derive(Clone, Debug)]
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// The URL it was opened from, for messages.
    url: String,
    /// How far an object's `last_modified` may lag the moment it was
    /// written, as seen by this process's clock: S3 stamps whole seconds
    /// with the server's clock; a local directory stamps exactly.
    stamp_margin: Duration,
}

/// One state file found by [`ObjectStorage::list_ssts`].
#[derive(Clone, Debug)]
pub struct ListedSst {
    pub id: u64,
    pub size: u64,
    pub last_modified: chrono::DateTime<chrono::Utc>,
}

fn io(url: &str, what: &str, e: impl std::fmt::Display) -> StorageError {
    StorageError::Io(format!("{what} ({url}): {e}"))
}

/// An object-store error as a storage error: I/O the runtime cancelled
/// (`file://` runs it on blocking tasks) means the process is stopping.
fn object_error(url: &str, what: &str, e: object_store::Error) -> StorageError {
    if is_cancelled(&e) {
        StorageError::ShuttingDown
    } else {
        io(url, what, e)
    }
}

fn is_cancelled(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::JoinError { source } if source.is_cancelled())
}

impl ObjectStorage {
    /// Opens the store `url` names. Nothing is checked over the network:
    /// call [`ObjectStorage::check`] for that.
    pub fn open(url: &str) -> StorageResult<ObjectStorage> {
        let bad = |why: &str| StorageError::Io(format!("invalid state store URL \"{url}\": {why}"));
        if let Some(dir) = url.strip_prefix("file://") {
            if !dir.starts_with('/') {
                return Err(bad("a file:// URL needs an absolute path (file:///dir)"));
            }
            std::fs::create_dir_all(dir)
                .map_err(|e| io(url, "cannot create the state directory", e))?;
            let fs = LocalFileSystem::new_with_prefix(dir)
                .map_err(|e| io(url, "cannot open the state directory", e))?
                .with_fsync(true);
            return Ok(ObjectStorage {
                store: Arc::new(fs),
                root: Path::default(),
                url: url.to_string(),
                stamp_margin: Duration::ZERO,
            });
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("no bucket (s3://bucket/prefix)"));
            }
            let mut builder = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_retry(RetryConfig {
                    max_retries: 3,
                    retry_timeout: Duration::from_secs(10),
                    ..Default::default()
                })
                .with_client_options(
                    ClientOptions::new()
                        .with_connect_timeout(Duration::from_secs(3))
                        .with_timeout(Duration::from_secs(30)),
                );
            // Client options replace those `from_env` read, AWS_ALLOW_HTTP
            // among them: apply it again.
            let allow_http = std::env::var("AWS_ALLOW_HTTP")
                .is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
            builder = builder.with_allow_http(allow_http);
            if std::env::var_os("AWS_REGION").is_none()
                && std::env::var_os("AWS_DEFAULT_REGION").is_none()
            {
                builder = builder.with_region("us-east-1");
            }
            let s3 = builder
                .build()
                .map_err(|e| io(url, "cannot configure the S3 client", e))?;
            return Ok(ObjectStorage {
                store: Arc::new(s3),
                root: Path::from(prefix),
                url: url.to_string(),
                stamp_margin: Duration::from_secs(2),
            });
        }
        Err(bad("expected file:///dir or s3://bucket/prefix"))
    }

    /// See the field's doc.
    pub fn stamp_margin(&self) -> Duration {
        self.stamp_margin
    }

    /// The URL the store was opened from.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Writes, reads back and deletes a probe object: an unreachable
    /// endpoint, a missing bucket or bad credentials fail here, at start,
    /// with the service's own words.
    pub async fn check(&self) -> StorageResult<()> {
        let path = self
            .root
            .clone()
            .join(format!("probe-{:016x}", rand::random::<u64>()));
        let put = self
            .store
            .put(&path, PutPayload::from_static(b"ebbflow"))
            .await;
        put.map_err(|e| io(&self.url, "the state store cannot be written", e))?;
        self.store
            .get_range(&path, 0..7)
            .await
            .map_err(|e| io(&self.url, "the state store cannot be read", e))?;
        self.store
            .delete(&path)
            .await
            .map_err(|e| io(&self.url, "the state store cannot delete", e))?;
        Ok(())
    }

    pub fn sst_path(&self, id: u64) -> Path {
        self.root
            .clone()
            .join(SST_DIR)
            .join(format!("{id:016x}.sst"))
    }

    /// Creates the object of state file `id`; `Ok(false)` if it exists
    /// already (the caller picks another id).
    pub async fn put_new(&self, id: u64, data: Bytes) -> StorageResult<bool> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&self.sst_path(id), PutPayload::from_bytes(data), opts)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(object_error(&self.url, "upload of a state file failed", e)),
        }
    }

    /// Reads part of a state file. Transient faults are retried with
    /// backoff for [`READ_RETRY_FOR`] (an object store that is away stalls
    /// the reader, as it stalls uploads); a missing file is an error at
    /// once.
    pub async fn get_range(&self, id: u64, range: Range<u64>) -> StorageResult<Bytes> {
        let started = std::time::Instant::now();
        let mut delay = Duration::from_millis(50);
        loop {
            match self
                .store
                .get_range(&self.sst_path(id), range.clone())
                .await
            {
                Ok(b) => return Ok(b),
                Err(e @ object_store::Error::NotFound { .. }) => {
                    return Err(io(
                        &self.url,
                        &format!("state file {id:016x} is missing"),
                        e,
                    ))
                }
                Err(e) if is_cancelled(&e) || started.elapsed() >= READ_RETRY_FOR => {
                    return Err(object_error(
                        &self.url,
                        &format!("read of state file {id:016x} failed"),
                        e,
                    ))
                }
                Err(e) => {
                    tracing::debug!(error = %e, "state file read failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    pub async fn delete(&self, id: u64) -> StorageResult<()> {
        match self.store.delete(&self.sst_path(id)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(object_error(&self.url, "delete of a state file failed", e)),
        }
    }

    /// Every state file object, referenced or not.
    pub async fn list_ssts(&self) -> StorageResult<Vec<ListedSst>> {
        let dir = self.root.clone().join(SST_DIR);
        let mut stream = self.store.list(Some(&dir));
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            let meta = item.map_err(|e| io(&self.url, "listing state files failed", e))?;
            let Some(name) = meta.location.filename() else {
                continue;
            };
            let Some(id) = name
                .strip_suffix(".sst")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
            else {
                continue;
            };
            out.push(ListedSst {
                id,
                size: meta.size,
                last_modified: meta.last_modified,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// I/O the runtime cancelled (it is stopping) is not retried: the
    /// uploader and readers give up at once instead of sleeping on a
    /// timer that no longer runs.
    #[tokio::test]
    async fn cancelled_io_means_shutting_down() {
        let task = tokio::spawn(std::future::pending::<()>());
        task.abort();
        let Err(source) = task.await else {
            panic!("an aborted task cannot finish");
        };
        let e = object_error(
            "file:///x",
            "upload",
            object_store::Error::JoinError { source },
        );
        assert!(matches!(e, StorageError::ShuttingDown));
        let other = object_store::Error::Generic {
            store: "test",
            source: "unreachable".into(),
        };
        assert!(matches!(
            object_error("file:///x", "upload", other),
            StorageError::Io(_)
        ));
    }
}
