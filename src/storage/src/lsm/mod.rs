//! State on object storage: immutable sorted files per epoch, versions,
//! a block cache, compaction and garbage collection (docs/design.md §9).
//!
//! ```text
//!  actors ──ingest──▶ LsmStateStore (one per compute process)
//!                       │ sync(epoch): one sorted file per epoch, uploaded
//!                       ▼
//!                  object store (file:// or s3://) ◀── compactor, GC
//!                       ▲ reads: version files through the block cache
//!  meta: commits version = epoch + live files in the SQL meta store,
//!        installs it in every store
//! ```
//!
//! A file is named by a random 63-bit id and written once with a
//! conditional put; a file no committed version references is never read
//! and is deleted by the garbage collector after a grace period.

pub mod cache;
pub mod compactor;
pub mod epoch;
pub mod fault;
pub mod object;
pub mod read;
pub mod sst;
pub mod store;
pub mod version;

pub use cache::{CacheOptions, SstStore};
pub use object::ObjectStorage;
pub use store::{LsmStateStore, StoreOptions};
pub use version::{Version, VersionDelta};
