//! Plans as data: the vocabulary the planner and meta hand the stream
//! runtime, and that meta keeps in its catalog and sends to compute nodes.
//!
//! A fragment is a chain of [`NodeDesc`]s (executors with their state
//! tables, watermarks, backfill and `ON CONFLICT` behaviour); meta places
//! it as actors ([`ActorDesc`]), each with its source ([`SourceDesc`]),
//! its dispatchers and its vnodes, and changes running actors with the
//! [`Mutation`] a barrier carries. Sources are described here too: the
//! connectors, how their streams are split, and what a relation's
//! `WITH (connector = …)` options mean.
//!
//! Everything here is plain data with serde (the catalog and the wire
//! carry it) over `common` and `expr`. This crate must not know how a plan
//! runs (executors, state tables, channels: `stream`), how it is made
//! (SQL, the planner) or where it is placed (meta): those crates depend on
//! it, never the other way (`ci/layers`).

pub mod actor;
pub mod node;
pub mod source;

pub use actor::{
    ActorDesc, DispatcherDesc, DispatcherKind, DispatcherUpdate, MergeUpdate, Mutation, SourceDesc,
    UpdateMutation,
};
pub use node::{BackfillDesc, NodeDesc, OnConflict, StateTableDesc, WatermarkDesc};
pub use source::{Connector, SplitSourceDesc};
