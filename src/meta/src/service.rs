//! The meta service: state, DDL, DML routing and flush.

use ebbflow_common::ErrorKind;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, oneshot, watch};

use super::barrier::{BarrierCommand, BarrierError, BarrierManager, BarrierSpec, FailureState};
use super::catalog::{ColumnDesc, RelationDesc, RelationKind, TableId};
use super::cluster::{host_of, Placement, UnitId, Worker, WorkerInfo, WorkerState};
use super::fragment::{Edge, Fragment};
use super::graph::UpstreamInfo;
use super::{MetaError, MetaResult};
use ebbflow_common::{ActorId, FragmentId};
use ebbflow_common::{DataType, Row};
use ebbflow_plan::Mutation;
use ebbflow_plan::{NodeDesc, StateTableDesc};
use ebbflow_storage::{EpochCommitter, MemoryStateStore, StateStore};
use ebbflow_stream::compute_node::{ComputeClient, ComputeNode, NodeServices, WorkerId};
use ebbflow_stream::exchange::ExchangeRegistry;

/// First id of user relations and internal state tables; ids below are
/// system catalogs.
pub const FIRST_USER_ID: TableId = 1000;

#[derive(Clone, Debug)]
pub struct MetaConfig {
    /// In-process compute nodes to start with (playground; none when
    /// `remote_workers`).
    pub compute_nodes: u32,
    /// Compute nodes are processes that register over gRPC (a cluster's
    /// meta); the workers of the committed catalog wait for theirs.
    pub remote_workers: bool,
    pub parallel_units: u32,
    pub barrier_interval: Duration,
}

/// How many actors a job's hash fragments run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Parallelism {
    /// Every running parallel unit of the cluster, following it as compute
    /// nodes join and leave.
    Adaptive,
    Fixed(u32),
    /// Set per fragment by `ALTER FRAGMENT` or `ALTER SYSTEM RESCHEDULE`:
    /// kept as it is (the adaptive policy leaves the job alone).
    Custom,
}

impl Parallelism {
    pub fn display(self) -> String {
        match self {
            Parallelism::Adaptive => "adaptive".into(),
            Parallelism::Fixed(n) => n.to_string(),
            Parallelism::Custom => "custom".into(),
        }
    }
}

/// Cluster-wide parameters of `ALTER SYSTEM SET`, committed with the
/// catalog.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SystemParams {
    /// Whether adaptive jobs follow the cluster's parallel units.
    pub adaptive_scaling: bool,
    /// How often the adaptive policy looks at the cluster.
    pub adaptive_scaling_interval_ms: u64,
    /// Snapshot rows each stream scan actor emits per barrier.
    pub backfill_rows_per_barrier: usize,
}

impl Default for SystemParams {
    fn default() -> Self {
        SystemParams {
            adaptive_scaling: true,
            adaptive_scaling_interval_ms: 1000,
            backfill_rows_per_barrier:
                ebbflow_stream::executor::stream_scan::DEFAULT_BACKFILL_ROWS_PER_BARRIER,
        }
    }
}

/// A table or MV and its streaming job.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RelationEntry {
    pub desc: Arc<RelationDesc>,
    pub dist_key: Vec<usize>,
    pub singleton: bool,
    pub fragments: Vec<FragmentId>,
    /// The fragment holding the relation's state (Materialize).
    pub materialize_fragment: FragmentId,
    /// Relations this one reads.
    pub upstreams: Vec<TableId>,
    pub internal_tables: Vec<TableId>,
    pub parallelism: Parallelism,
}

#[derive(Default)]
pub struct MetaState {
    pub workers: BTreeMap<WorkerId, Worker>,
    pub relations: BTreeMap<TableId, RelationEntry>,
    pub fragments: BTreeMap<FragmentId, Fragment>,
    pub edges: Vec<Edge>,
    next_table_id: TableId,
    pub(super) next_fragment_id: FragmentId,
    pub(super) next_actor_id: ActorId,
    pub(super) next_worker_id: WorkerId,
    pub(super) next_unit_id: UnitId,
    /// `rw_scale_history`.
    pub scale_history: Vec<ScaleRecord>,
    pub params: SystemParams,
    pub users: BTreeMap<String, super::users::UserEntry>,
    /// The committed state's keys are in the format before canonical keys
    /// (a catalog of an earlier version): the next recovery migrates
    /// them (see `key_format`).
    pub(super) legacy_keys: bool,
}

/// One scale or reschedule operation, as `rw_scale_history` shows it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ScaleRecord {
    pub id: u32,
    pub started_at: chrono::NaiveDateTime,
    pub statement: String,
    pub actors_added: u32,
    pub actors_removed: u32,
    pub vnodes_moved: u32,
    /// Vnodes whose new owner runs on another compute node.
    #[serde(default)]
    pub vnodes_moved_across_workers: u32,
    pub pause_ms: f64,
    pub total_ms: f64,
    pub status: String,
}

impl MetaState {
    /// Where new actors go, given the actors placed so far.
    pub fn placement(&self) -> Placement<'_> {
        Placement::new(
            &self.workers,
            self.fragments
                .values()
                .flat_map(|f| f.actors.iter().map(|a| a.unit)),
        )
    }

    pub fn next_actor(&mut self) -> ActorId {
        self.next_actor_id += 1;
        self.next_actor_id
    }

    pub fn worker_of_unit(&self, unit: UnitId) -> Option<WorkerId> {
        self.workers
            .values()
            .find(|w| w.units.contains(&unit))
            .map(|w| w.id)
    }

    pub fn relation_by_name(&self, name: &str) -> Option<&RelationEntry> {
        self.relations.values().find(|r| r.desc.name == name)
    }

    pub fn alloc_table_id(&mut self) -> TableId {
        self.next_table_id += 1;
        self.next_table_id
    }

    pub fn total_units(&self) -> usize {
        self.workers
            .values()
            .filter(|w| w.state == WorkerState::Running)
            .map(|w| w.units.len())
            .sum()
    }

    pub fn node(&self, worker: WorkerId) -> Option<Arc<dyn ComputeClient>> {
        self.workers.get(&worker).map(|w| w.node.clone())
    }
}

impl UpstreamInfo for MetaState {
    fn dist_key(&self, table_id: TableId) -> Option<Vec<usize>> {
        let r = self.relations.get(&table_id)?;
        if r.singleton {
            None
        } else {
            Some(r.dist_key.clone())
        }
    }

    fn state_table(&self, table_id: TableId) -> Option<StateTableDesc> {
        let r = self.relations.get(&table_id)?;
        self.fragments
            .get(&r.materialize_fragment)?
            .nodes
            .iter()
            .find_map(|n| match n {
                NodeDesc::Materialize { table, .. } => Some(table.clone()),
                _ => None,
            })
    }
}

/// The durable part of meta's state, committed with the epoch of the
/// barrier that applied each change.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct PersistedMeta {
    relations: BTreeMap<TableId, RelationEntry>,
    fragments: BTreeMap<FragmentId, Fragment>,
    edges: Vec<Edge>,
    next_table_id: TableId,
    pub(super) next_fragment_id: FragmentId,
    pub(super) next_actor_id: ActorId,
    #[serde(default)]
    scale_history: Vec<ScaleRecord>,
    #[serde(default)]
    workers: Vec<WorkerInfo>,
    #[serde(default)]
    next_worker_id: WorkerId,
    #[serde(default)]
    next_unit_id: UnitId,
    #[serde(default)]
    params: SystemParams,
    users: Option<BTreeMap<String, super::users::UserEntry>>,
    /// [`super::key_format::KEY_FORMAT`] of the state; 0 in catalogs of
    /// versions before it.
    #[serde(default)]
    key_format: u32,
}

impl MetaState {
    /// The catalog, serialized.
    pub fn snapshot(&self) -> bytes::Bytes {
        let p = PersistedMeta {
            relations: self.relations.clone(),
            fragments: self.fragments.clone(),
            edges: self.edges.clone(),
            next_table_id: self.next_table_id,
            next_fragment_id: self.next_fragment_id,
            next_actor_id: self.next_actor_id,
            scale_history: self.scale_history.clone(),
            workers: self.workers.values().map(Worker::info).collect(),
            next_worker_id: self.next_worker_id,
            next_unit_id: self.next_unit_id,
            params: self.params.clone(),
            users: Some(self.users.clone()),
            key_format: if self.legacy_keys {
                0
            } else {
                super::key_format::KEY_FORMAT
            },
        };
        bytes::Bytes::from(serde_json::to_vec(&p).unwrap_or_default())
    }

    fn restore(&mut self, p: PersistedMeta) {
        self.relations = p.relations;
        self.fragments = p.fragments;
        self.edges = p.edges;
        self.next_table_id = p.next_table_id;
        self.next_fragment_id = p.next_fragment_id;
        self.next_actor_id = p.next_actor_id;
        self.scale_history = p.scale_history;
        self.params = p.params;
        self.users = p.users.unwrap_or_default();
        self.legacy_keys = p.key_format < super::key_format::KEY_FORMAT;
        self.next_worker_id = self.next_worker_id.max(p.next_worker_id);
        self.next_unit_id = self.next_unit_id.max(p.next_unit_id);
        ebbflow_stream::executor::stream_scan::set_backfill_rows_per_barrier(
            self.params.backfill_rows_per_barrier,
        );
        // Actors placed on workers this process does not have move to the
        // units that exist, round robin.
        let units: Vec<(WorkerId, UnitId)> = self
            .workers
            .values()
            .flat_map(|w| w.units.iter().map(move |u| (w.id, *u)))
            .collect();
        if units.is_empty() {
            return;
        }
        let mut next = 0;
        for f in self.fragments.values_mut() {
            for a in &mut f.actors {
                let ok = self
                    .workers
                    .get(&a.worker)
                    .is_some_and(|w| w.units.contains(&a.unit));
                if !ok {
                    let (w, u) = units[next % units.len()];
                    next += 1;
                    a.worker = w;
                    a.unit = u;
                }
            }
        }
    }
}

pub use super::dml::TableRoute;

pub struct Meta {
    pub config: MetaConfig,
    pub(crate) state: Mutex<MetaState>,
    /// The compute nodes' store (one per process; all in-process nodes
    /// share it). Batch reads go through its committed snapshots.
    pub store: Arc<dyn StateStore>,
    /// Commits epochs, the catalog with them, and table drops.
    pub committer: Arc<dyn EpochCommitter>,
    pub(super) registry: Arc<ExchangeRegistry>,
    pub(super) nodes: Arc<RwLock<HashMap<WorkerId, Arc<dyn ComputeClient>>>>,
    pub(super) barrier_tx: mpsc::UnboundedSender<BarrierCommand>,
    pub(super) committed: watch::Receiver<u64>,
    /// One DDL (or scale) at a time.
    pub ddl_lock: tokio::sync::Mutex<()>,
    /// Held shared by DML while it routes and sends; exclusively while the
    /// layout of a table changes.
    pub routes: tokio::sync::RwLock<HashMap<TableId, Arc<TableRoute>>>,
    pub(super) row_id: AtomicI64,
    pub(super) recoveries: AtomicI64,
    /// Set from a failure until the recovery that follows succeeds.
    pub(super) recovering: std::sync::atomic::AtomicBool,
    /// Test knob shared by every actor: see `inject_actor_failure`.
    pub(super) fault: Arc<std::sync::atomic::AtomicU32>,
    /// See `BarrierManager::dml_gate`.
    pub(super) dml_gate: Arc<tokio::sync::RwLock<()>>,
    pub(super) failure_state: Arc<FailureState>,
    /// What a new compute node is started with.
    pub(super) services: NodeServices,
    /// The recovery generation: each recovery starts a new one, and compute
    /// processes refuse what was sent in an older one. Starts at the
    /// start time, so a restarted meta never reuses one.
    pub generation: Arc<std::sync::atomic::AtomicU64>,
    /// Wakes the adaptive policy (a node joined, the policy was enabled).
    pub(super) policy_wake: Arc<tokio::sync::Notify>,
    /// Told when a compute node joins or comes back (a recovery waiting
    /// for one retries).
    pub(super) nodes_changed: tokio::sync::Notify,
    /// A fail-over whose recovery has not completed yet: when it started
    /// and what moved.
    /// Workers removed by `ALTER SYSTEM REMOVE WORKER` since meta started:
    /// their processes are told to exit at their next heartbeat.
    pub(super) removed_workers: Mutex<std::collections::HashSet<WorkerId>>,
    pub(super) failover_pending: Mutex<
        Option<(
            chrono::NaiveDateTime,
            Instant,
            super::reschedule::ScaleSummary,
        )>,
    >,
}

impl Meta {
    /// Start meta, the compute nodes and the barrier manager.
    /// Start with an in-memory store (tests).
    pub fn start(config: MetaConfig) -> Arc<Meta> {
        let store = Arc::new(MemoryStateStore::new());
        Self::start_with_store(config, store.clone(), store)
    }

    /// Start meta over `store`, committed by `committer`. If a catalog was
    /// committed, it is loaded; call [`Meta::resume`] to rebuild its actors.
    pub fn start_with_store(
        config: MetaConfig,
        store: Arc<dyn StateStore>,
        committer: Arc<dyn EpochCommitter>,
    ) -> Arc<Meta> {
        let registry = Arc::new(ExchangeRegistry::default());
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (committed_tx, committed_rx) = watch::channel(committer.committed_epoch());
        let (readable_tx, readable_rx) = watch::channel(committer.committed_epoch());
        let nodes = Arc::new(RwLock::new(HashMap::new()));
        let fault = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let services = NodeServices {
            store: store.clone(),
            registry: registry.clone(),
            events: events_tx,
            committed: committed_rx.clone(),
            readable: readable_rx,
            fault: fault.clone(),
        };
        let mut state = MetaState {
            next_table_id: FIRST_USER_ID,
            ..Default::default()
        };
        let persisted = match committer.committed_catalog() {
            Some(bytes) => match serde_json::from_slice::<PersistedMeta>(&bytes) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the persisted catalog; starting empty");
                    None
                }
            },
            None => None,
        };
        // The compute nodes: those of the committed catalog, else the
        // configured ones (ids 1..N, units 0..N·P−1 in node order).
        let workers: Vec<WorkerInfo> = match persisted.as_ref().map(|p| &p.workers) {
            Some(w) if !w.is_empty() => w.clone(),
            _ if config.remote_workers => Vec::new(),
            _ => (1..=config.compute_nodes)
                .map(|id| WorkerInfo {
                    id,
                    host: host_of(id),
                    state: WorkerState::Running,
                    units: ((id - 1) * config.parallel_units..id * config.parallel_units).collect(),
                })
                .collect(),
        };
        for w in workers {
            let node: Arc<dyn ComputeClient> = if config.remote_workers {
                Arc::new(super::cluster::Unconnected::new())
            } else {
                Arc::new(ComputeNode::new(w.id, &services))
            };
            if w.state == WorkerState::Down {
                node.kill();
            } else {
                nodes.write().insert(w.id, node.clone());
            }
            state.next_worker_id = state.next_worker_id.max(w.id);
            state.next_unit_id = state
                .next_unit_id
                .max(w.units.iter().map(|u| u + 1).max().unwrap_or(0));
            state.workers.insert(
                w.id,
                Worker {
                    id: w.id,
                    host: w.host,
                    state: w.state,
                    units: w.units,
                    node,
                },
            );
        }
        if let Some(p) = persisted {
            state.restore(p);
        }
        let (barrier_tx, barrier_rx) = mpsc::unbounded_channel();
        let (recovery_tx, recovery_rx) = mpsc::unbounded_channel();
        let dml_gate = Arc::new(tokio::sync::RwLock::new(()));
        let failure_state = Arc::new(FailureState::default());
        let manager = BarrierManager::new(
            store.clone(),
            committer.clone(),
            nodes.clone(),
            events_rx,
            barrier_rx,
            committed_tx,
            // In-process compute nodes share meta's store: an epoch's
            // writes are readable once every actor has collected it.
            (!config.remote_workers).then_some(readable_tx),
            config.barrier_interval,
            recovery_tx,
            dml_gate.clone(),
            failure_state.clone(),
        );
        tokio::spawn(manager.run());
        let now_micros = chrono::Utc::now().timestamp_micros();
        let meta = Arc::new(Meta {
            generation: Arc::new(std::sync::atomic::AtomicU64::new(now_micros as u64)),
            services,
            policy_wake: Arc::new(tokio::sync::Notify::new()),
            nodes_changed: tokio::sync::Notify::new(),
            failover_pending: Mutex::new(None),
            removed_workers: Mutex::new(Default::default()),
            config,
            state: Mutex::new(state),
            store,
            committer,
            registry,
            nodes,
            barrier_tx,
            committed: committed_rx,
            ddl_lock: tokio::sync::Mutex::new(()),
            routes: tokio::sync::RwLock::new(HashMap::new()),
            row_id: AtomicI64::new(now_micros << 10),
            recoveries: AtomicI64::new(0),
            recovering: std::sync::atomic::AtomicBool::new(false),
            fault,
            dml_gate,
            failure_state,
        });
        tokio::spawn(super::recovery::recovery_loop(
            Arc::downgrade(&meta),
            recovery_rx,
        ));
        tokio::spawn(super::workers::failure_detector(Arc::downgrade(&meta)));
        tokio::spawn(super::workers::adaptive_policy(Arc::downgrade(&meta)));
        meta
    }

    pub fn committed_epoch(&self) -> u64 {
        *self.committed.borrow()
    }

    /// A barrier with `mutation`; the catalog is committed with it when
    /// there is a mutation.
    pub(super) async fn barrier(
        &self,
        mutation: Option<Mutation>,
        add_actors: Vec<ActorId>,
        add_sources: Vec<(WorkerId, ActorId)>,
        remove_actors: Vec<ActorId>,
    ) -> MetaResult<u64> {
        let meta_snapshot = mutation.as_ref().map(|_| self.state.lock().snapshot());
        self.barrier_with(BarrierSpec {
            mutation,
            add_actors,
            add_sources,
            remove_actors,
            meta_snapshot,
            ..Default::default()
        })
        .await
    }

    /// Persist the catalog with the next barrier and wait until it is
    /// committed.
    pub async fn persist_catalog(&self) -> MetaResult<u64> {
        let meta_snapshot = Some(self.state.lock().snapshot());
        self.barrier_with(BarrierSpec {
            meta_snapshot,
            ..Default::default()
        })
        .await
    }

    /// Persist the catalog with the next barrier, without waiting.
    pub fn persist_catalog_soon(&self) {
        let _ = self.send_barrier(BarrierSpec {
            meta_snapshot: Some(self.state.lock().snapshot()),
            ..Default::default()
        });
    }

    /// Run one barrier; returns the epoch it closed, once committed.
    pub async fn barrier_with(&self, spec: BarrierSpec) -> MetaResult<u64> {
        self.send_barrier(spec)?
            .await
            .map_err(|_| MetaError::internal("barrier manager is gone"))?
            .map_err(MetaError::from)
    }

    /// Queue one barrier; the receiver is told its result once committed.
    fn send_barrier(
        &self,
        spec: BarrierSpec,
    ) -> MetaResult<oneshot::Receiver<Result<u64, BarrierError>>> {
        let (done, rx) = oneshot::channel();
        self.barrier_tx
            .send(BarrierCommand {
                spec,
                reset: None,
                done,
            })
            .map_err(|_| MetaError::internal("barrier manager is gone"))?;
        Ok(rx)
    }

    /// Force a checkpoint; returns once everything sent before is committed.
    pub async fn flush(&self) -> MetaResult<u64> {
        self.barrier(None, vec![], vec![], vec![]).await
    }

    /// How many failures the cluster had (see `write_dml_statement`).
    pub fn failure_generation(&self) -> u64 {
        self.failure_state.generation()
    }

    /// A flush vouching for DML sent at failure generation `since`: fails
    /// if a failure came after it, since the recovery that followed
    /// restarted from the last committed epoch, which may not hold it.
    pub async fn flush_since(&self, since: u64) -> MetaResult<u64> {
        let epoch = self.flush().await?;
        if self.failure_state.generation() != since {
            return Err(MetaError::new(
                ErrorKind::InternalError,
                "a failure interrupted the flush: the cluster recovered from its last committed epoch, so changes written before it may be lost",
            ));
        }
        Ok(epoch)
    }

    pub(super) fn check_name_free(state: &MetaState, name: &str) -> MetaResult<()> {
        if let Some(r) = state.relation_by_name(name) {
            return Err(MetaError::new(
                ErrorKind::DuplicateTable,
                format!("relation \"{}\" already exists", r.desc.name),
            ));
        }
        Ok(())
    }

    /// Allocate ids for a job's state tables (used by the planner).
    pub fn alloc_table_id(&self) -> TableId {
        self.state.lock().alloc_table_id()
    }

    /// Record a job's parallelism setting (when no actor has to change).
    pub(crate) fn set_parallelism(&self, table_id: TableId, p: Parallelism) {
        if let Some(r) = self.state.lock().relations.get_mut(&table_id) {
            r.parallelism = p;
        }
    }

    /// Whether a relation of that name exists.
    pub fn name_exists(&self, name: &str) -> bool {
        self.state.lock().relation_by_name(name).is_some()
    }

    /// Read the state under its lock (meta's own modules; the layers above
    /// read through `read.rs`).
    pub(crate) fn with_state<R>(&self, f: impl FnOnce(&MetaState) -> R) -> R {
        f(&self.state.lock())
    }

    /// Every committed row of a table or MV (hidden columns included).
    pub async fn scan(&self, desc: &RelationDesc) -> MetaResult<Vec<Row>> {
        self.scan_at(&*self.store.snapshot(), desc).await
    }

    /// Every row of a table or MV as of `snapshot` (hidden columns
    /// included).
    pub async fn scan_at(
        &self,
        snapshot: &dyn ebbflow_storage::ReadSnapshot,
        desc: &RelationDesc,
    ) -> MetaResult<Vec<Row>> {
        Ok(ebbflow_storage::state_table::scan_table_committed(
            snapshot,
            desc.id,
            &desc.types(),
            None,
        )
        .await?)
    }

    pub fn relation_by_name(&self, name: &str) -> Option<Arc<RelationDesc>> {
        self.state
            .lock()
            .relation_by_name(name)
            .map(|r| r.desc.clone())
    }

    pub fn all_relations(&self) -> Vec<Arc<RelationDesc>> {
        self.state
            .lock()
            .relations
            .values()
            .map(|r| r.desc.clone())
            .collect()
    }

    /// Shut down every actor.
    pub fn shutdown(&self) {
        for n in self.nodes.read().values() {
            n.abort_all();
        }
        self.registry.clear();
    }
}

/// Columns of a new table: the declared ones, plus a hidden row id when no
/// primary key is declared. Returns the columns and the pk.
pub fn table_columns(
    columns: Vec<ColumnDesc>,
    pk: Vec<usize>,
) -> (Vec<ColumnDesc>, Vec<usize>, bool) {
    if pk.is_empty() {
        let mut cols = columns;
        cols.push(ColumnDesc::hidden("_row_id", DataType::Int64));
        let n = cols.len() - 1;
        (cols, vec![n], false)
    } else {
        (columns, pk, true)
    }
}

/// Make a catalog entry's descriptor.
#[allow(clippy::too_many_arguments)]
pub fn relation_desc(
    id: TableId,
    name: String,
    kind: RelationKind,
    columns: Vec<ColumnDesc>,
    pk: Vec<usize>,
    user_pk: bool,
    definition: Option<String>,
    with_options: BTreeMap<String, String>,
) -> RelationDesc {
    RelationDesc {
        id,
        name,
        kind,
        columns,
        pk,
        user_pk,
        definition,
        with_options,
        append_only: false,
        watermark: None,
        on_conflict: Default::default(),
    }
}
