//! Types shared by every layer: data types and values, chunks, bitmaps,
//! and the byte encodings of rows (memcomparable keys that are equal for
//! equal values, exact values, and the vnode hash).
//!
//! It owns the vocabulary and must know nothing of what uses it: no
//! executor, plan, catalog or protocol type, and no workspace crate below
//! it (`ci/layers`).

pub mod bitmap;
pub mod chunk;
pub mod column;
pub mod encoding;
pub mod error;
pub mod ids;
pub mod jsonb;
pub mod order;
pub mod text;
pub mod time_unit;
pub mod types;
pub mod zone;

pub use bitmap::Bitmap;
pub use chunk::{Op, StreamChunk, StreamChunkBuilder, CHUNK_SIZE};
pub use column::{datum_ref, Column, ColumnBuilder, DatumRef, ScalarRef};
pub use encoding::{vnode_of, VirtualNode, VNODE_COUNT};
pub use error::ErrorKind;
pub use ids::{ActorId, Epoch, FragmentId, TableId, UnitId, WorkerId};
pub use time_unit::TimeUnit;
pub use types::{
    identical, ArrayValue, DataType, Datum, ElemType, Field, Interval, Numeric, Row, ScalarValue,
    F64,
};
pub use zone::Zone;

/// A hash map with a fast, non-cryptographic hasher, for executors' caches
/// keyed by datums (hashed once or more per row).
pub type FastHashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// The set of [`FastHashMap`].
pub type FastHashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
