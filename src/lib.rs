//! ebbflow: a streaming SQL database that scales running jobs online.
//!
//! # Life of a query
//!
//! A client speaks the PostgreSQL protocol to [`pgwire`], which hands each
//! statement to a [`frontend`] session. The session parses and binds it
//! ([`sql`]) into a [`planner::logical::LogicalPlan`], then:
//!
//! - a `SELECT` runs in the [`batch`] engine over the rows of the last
//!   committed epoch;
//! - DML is turned into a change chunk and routed by vnode to the actors of
//!   the table's fragment;
//! - `CREATE MATERIALIZED VIEW` is cut by the stream planner into a graph of
//!   fragments, which [`meta`] places as actors on the parallel units of the
//!   compute nodes and wires in with one barrier.
//!
//! ```text
//!  psql ──pgwire──▶ frontend ─ parse/bind ─▶ logical plan
//!                     │ DDL               │ SELECT
//!                     ▼                   ▼
//!                   meta ───────────▶ batch engine ◀── committed state
//!        catalog · placement · barriers
//!                     │ build actors, inject barriers, collect, commit
//!                     ▼
//!   compute nodes: actors = merge → executors → dispatchers (by vnode)
//!                     │ state writes per epoch
//!                     ▼
//!   state store: one sorted file per epoch on an object store (lsm),
//!   key = table | vnode | pk; meta commits each epoch's version (its
//!   files) with the catalog in a SQL meta store
//! ```
//!
//! # Life of a barrier
//!
//! Every `barrier_interval_ms`, meta injects a barrier into every source
//! actor. It flows down the graph behind the data; each actor aligns it over
//! its inputs, hands its state writes for the epoch it closes to the store,
//! forwards it and reports it. When every actor has reported, the store
//! uploads the epoch's writes as a file and meta commits the epoch — the
//! new version of the store, with the catalog — in one meta-store
//! transaction; then batch reads see it. The protocol is written down in
//! [`stream::message`].
//!
//! # Life of a scale
//!
//! Because state is keyed by vnode and the store is shared, scaling moves
//! no data: it changes which actor owns which vnodes. Meta computes a new
//! vnode mapping with minimal movement, builds the new actors idle, and
//! sends one barrier whose `Update` mutation switches dispatchers, merges
//! and bitmaps at once (docs/design.md §5).
//!
//! # A cluster of processes
//!
//! The playground runs meta and its compute nodes in one process. A cluster
//! runs the same code in roles: `ebbflow meta` and `ebbflow compute`
//! processes that talk gRPC ([`rpc`]): meta drives each compute node
//! through one interface (`stream::compute_node::ComputeClient`) — in
//! process for the playground, over the `Compute` service for a process —
//! and actors on different processes exchange chunks and barriers over one
//! credit-controlled stream per process pair. Each process writes its own
//! epoch files; meta commits them together.
//!
//! # The crates
//!
//! Each layer above is a crate of the workspace (`src/<layer>`); this one
//! is the binary: [`server`] assembles a process from them, [`metrics`]
//! serves `/metrics`, and every layer is re-exported under its name for
//! the tests. `ci/layers` keeps the dependencies pointing down; the README
//! lists what each crate owns.

/// The batch engine for ad-hoc queries over committed state (the
/// `ebbflow-batch` crate).
pub use ebbflow_batch as batch;
/// Values, types, columnar chunks (Arrow arrays), bitmaps and the byte
/// encodings of rows (the `ebbflow-common` crate).
pub use ebbflow_common as common;
/// Scalar expressions (evaluated by row or a column at a time) and aggregate
/// functions, with PostgreSQL semantics (the `ebbflow-expr` crate).
pub use ebbflow_expr as expr;
/// Client sessions: statements from parse to result (the
/// `ebbflow-frontend` crate).
pub use ebbflow_frontend as frontend;
/// Meta: catalog, cluster, placement, scaling, barrier manager (the
/// `ebbflow-meta` crate).
pub use ebbflow_meta as meta;
/// State on object storage: epoch files, versions, block cache, compaction
/// (a module of the `ebbflow-storage` crate).
pub use ebbflow_storage::lsm;
/// Prometheus metrics and their `/metrics` endpoint.
pub mod metrics;
/// The PostgreSQL wire protocol server (the `ebbflow-pgwire` crate).
pub use ebbflow_pgwire as pgwire;
/// Plans as data: fragments, actors, sources and barrier mutations, as the
/// planner and meta hand them to the runtime (the `ebbflow-plan` crate).
pub use ebbflow_plan as plan;
/// Logical plans and the stream planner that cuts them into fragments (the
/// `ebbflow-planner` crate).
pub use ebbflow_planner as planner;
/// A cluster of processes: the meta ↔ compute gRPC contract, the compute
/// process, meta's client of it, and the remote exchange between processes
/// (the `ebbflow-rpc` crate).
pub use ebbflow_rpc as rpc;
/// Starting a process: meta with its store, compute nodes or the cluster's
/// RPC, and the pgwire listener.
pub mod server;
/// Parsing and binding of SQL (the `ebbflow-sql` crate).
pub use ebbflow_sql as sql;
/// The state store and per-actor state tables (the `ebbflow-storage`
/// crate).
pub use ebbflow_storage as storage;
/// The streaming runtime: actors, executors, exchange, compute nodes (the
/// `ebbflow-stream` crate).
pub use ebbflow_stream as stream;
