//! The streaming runtime: actors (a merge, a chain of executors, a set of
//! dispatchers) that process chunks and barriers, hosted by compute nodes.

pub mod actor;
pub mod build;
/// Actor-to-actor channels bounded in rows (credits).
pub mod channel;
/// The wire encoding of chunks and barriers for the remote exchange.
pub mod codec;
pub mod compute_node;
pub mod exchange;
pub mod executor;
pub mod message;
/// Source connectors (`datagen`, `nexmark`): splits and their reader.
pub mod source;

use message::ActorId;

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("{0}")]
    Storage(#[from] crate::storage::StorageError),
    #[error("{0}")]
    Expr(#[from] crate::expr::ExprError),
    #[error("input channel from actor {0:?} closed")]
    ChannelClosed(Option<ActorId>),
    #[error("downstream actor {0} is gone")]
    DownstreamClosed(ActorId),
    #[error("{0}")]
    Internal(String),
}

pub type StreamResult<T> = Result<T, StreamError>;
