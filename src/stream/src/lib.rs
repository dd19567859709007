//! The streaming runtime: actors (a merge, a chain of executors, a set of
//! dispatchers) that process chunks and barriers, hosted by compute nodes.
//!
//! It owns how a plan runs: building actors from `plan`'s descriptions,
//! the barrier protocol ([`message`]), the exchange between actors, the
//! executors and their state (through `storage`'s state tables), and the
//! source readers. Meta drives it through [`compute_node::ComputeClient`].
//! It must not know the catalog, placement or scaling policy (meta), SQL
//! or the planner, sessions or the wire protocol: those crates depend on
//! it, never the other way (`ci/layers`).

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
    Storage(#[from] ebbflow_storage::StorageError),
    #[error("{0}")]
    Expr(#[from] ebbflow_expr::ExprError),
    #[error("input channel from actor {0:?} closed")]
    ChannelClosed(Option<ActorId>),
    #[error("downstream actor {0} is gone")]
    DownstreamClosed(ActorId),
    #[error("{0}")]
    Internal(String),
}

pub type StreamResult<T> = Result<T, StreamError>;
