//! Compute nodes joining, draining, leaving and failing (docs/design.md §5, §6).
//!
//! Each is a reschedule plan computed by meta from the cluster's state
//! ([`MetaState::cluster_plan`]) and applied by the scale pipeline:
//! - a node joins (`ALTER SYSTEM ADD WORKER`): the adaptive policy grows
//!   adaptive jobs onto its units at its next tick;
//! - a drain (`ALTER SYSTEM RESCHEDULE DRAIN WORKER`) marks the node
//!   `draining` and moves every actor off it with one barrier;
//! - a node that dies is noticed by the failure detector (its heartbeat
//!   task ended or went silent), marked `down`, and the recovery that
//!   follows places its actors on the surviving units before rebuilding
//!   every job from the last committed epoch.

use ebbflow_common::ErrorKind;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::cluster::{host_of, UnitId, Worker, WorkerState};
use super::reschedule::{FragmentChange, ScaleKind, ScaleSummary};
use super::service::{Meta, MetaState, Parallelism};
use super::{MetaError, MetaResult};
use ebbflow_stream::actor::ComputeEvent;
use ebbflow_stream::compute_node::{
    ComputeClient, ComputeNode, NodeResult, WorkerId, HEARTBEAT_INTERVAL,
};
use ebbflow_stream::message::FragmentId;

/// A node whose heartbeat is older than this is down (its heartbeat task
/// ending is noticed at the next detector tick).
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(3);

/// The most parallel units one compute node may have.
const MAX_UNITS_PER_NODE: u32 = 64;

/// How a cluster plan sizes each fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sizing {
    /// Keep each fragment's actor count where enough running units remain
    /// (a drain, a fail-over).
    Keep,
    /// The adaptive policy: adaptive jobs on every running unit, fixed jobs
    /// back at their parallelism, custom jobs as they are.
    Policy,
}

/// A job that needs more running units than there are.
#[derive(Clone, Debug)]
pub(super) struct Shortfall {
    pub job: String,
    pub actors: usize,
}

impl MetaState {
    /// Units of running compute nodes.
    fn running_units(&self) -> Vec<UnitId> {
        self.workers
            .values()
            .filter(|w| w.state == WorkerState::Running)
            .flat_map(|w| w.units.iter().copied())
            .collect()
    }

    /// Per fragment: move every actor off units of compute nodes that are
    /// not running, and size it by `sizing`. Also returns the jobs with a
    /// fixed or custom parallelism that cannot keep their actor count.
    pub(super) fn cluster_plan(
        &self,
        sizing: Sizing,
    ) -> (BTreeMap<FragmentId, FragmentChange>, Vec<Shortfall>) {
        let running = self.running_units();
        let avail = running.len();
        let mut plan = BTreeMap::new();
        let mut short = Vec::new();
        if avail == 0 {
            return (plan, short);
        }
        let mut placement = self.placement();
        for r in self.relations.values() {
            for fid in &r.fragments {
                let Some(f) = self.fragments.get(fid) else {
                    continue;
                };
                let cur = f.actors.len();
                let target = if f.singleton {
                    1
                } else {
                    match (sizing, r.parallelism) {
                        (Sizing::Policy, Parallelism::Adaptive) => avail,
                        (Sizing::Policy, Parallelism::Fixed(n)) => (n as usize).min(avail),
                        (Sizing::Policy, Parallelism::Custom) => cur.min(avail),
                        (Sizing::Keep, p) => {
                            if cur > avail && p != Parallelism::Adaptive {
                                short.push(Shortfall {
                                    job: r.desc.name.clone(),
                                    actors: cur,
                                });
                            }
                            cur.min(avail)
                        }
                    }
                }
                .max(1);
                let mut change = FragmentChange::default();
                let mut keep = Vec::new();
                for a in &f.actors {
                    if running.contains(&a.unit) {
                        keep.push((a.worker, a.unit));
                    } else {
                        change.remove.push(a.unit);
                        placement.release(a.unit);
                    }
                }
                if keep.len() > target {
                    let extra = placement.pick_removals(&keep, keep.len() - target);
                    keep.retain(|(_, u)| !extra.contains(u));
                    change.remove.extend(extra);
                }
                if keep.len() < target {
                    change.add = placement
                        .pick(&keep, target - keep.len())
                        .into_iter()
                        .map(|(_, u)| u)
                        .collect();
                }
                if !change.add.is_empty() || !change.remove.is_empty() {
                    plan.insert(*fid, change);
                }
            }
        }
        // one entry per job in the shortfall
        short.dedup_by(|a, b| a.job == b.job);
        (plan, short)
    }

    /// Actors placed on a compute node.
    pub(super) fn actors_on(&self, worker: WorkerId) -> usize {
        self.fragments
            .values()
            .flat_map(|f| f.actors.iter())
            .filter(|a| a.worker == worker)
            .count()
    }

    fn worker(&self, id: WorkerId) -> MetaResult<&Worker> {
        self.workers.get(&id).ok_or_else(|| {
            MetaError::new(
                ErrorKind::UndefinedObject,
                format!("compute node {id} does not exist"),
            )
        })
    }

    /// Mark nodes that stopped beating `down` (killing whatever is left of
    /// them); returns them.
    pub(super) fn mark_dead_workers(&mut self) -> Vec<WorkerId> {
        let mut out = Vec::new();
        for w in self.workers.values_mut() {
            if w.state != WorkerState::Down && !w.node.is_alive(HEARTBEAT_TIMEOUT) {
                tracing::warn!(worker = w.id, "compute node is down");
                w.state = WorkerState::Down;
                w.node.kill();
                out.push(w.id);
            }
        }
        out
    }
}

impl Meta {
    fn start_node(&self, id: WorkerId) -> Arc<dyn ComputeClient> {
        let node = Arc::new(ComputeNode::new(id, &self.services));
        self.nodes.write().insert(id, node.clone());
        node
    }

    /// Commit a membership change with the next barrier. While a recovery
    /// runs that barrier is refused; the change stands (it is in effect)
    /// and the recovery's barrier commits it with the catalog.
    async fn commit_membership(&self) {
        if let Err(e) = self.persist_catalog().await {
            tracing::warn!(error = %e, "membership change to be committed by the recovery");
        }
    }

    /// `ALTER SYSTEM ADD WORKER [WITH (parallel_units = n)]`: start a
    /// compute node; returns its id. Adaptive jobs grow onto it at the
    /// policy's next tick.
    pub async fn add_worker(&self, parallel_units: Option<u32>) -> MetaResult<WorkerId> {
        self.refuse_in_cluster("ALTER SYSTEM ADD WORKER")?;
        let n = parallel_units.unwrap_or(self.config.parallel_units);
        if n == 0 || n > MAX_UNITS_PER_NODE {
            return Err(MetaError::new(
                ErrorKind::InvalidParameterValue,
                format!("parallel_units must be between 1 and {MAX_UNITS_PER_NODE}, got {n}"),
            ));
        }
        let _ddl = self.ddl_lock.lock().await;
        let id = {
            let mut st = self.state.lock();
            st.next_worker_id += 1;
            let id = st.next_worker_id;
            let first = st.next_unit_id;
            st.next_unit_id += n;
            let node = self.start_node(id);
            st.workers.insert(
                id,
                Worker {
                    id,
                    host: host_of(id),
                    state: WorkerState::Running,
                    units: (first..first + n).collect(),
                    node,
                },
            );
            id
        };
        self.commit_membership().await;
        tracing::info!(worker = id, units = n, "compute node joined");
        self.policy_wake.notify_one();
        self.nodes_changed.notify_one();
        Ok(id)
    }

    /// In a cluster, compute nodes are processes started by the operator.
    fn refuse_in_cluster(&self, statement: &str) -> MetaResult<()> {
        if self.config.remote_workers {
            return Err(MetaError::new(
                ErrorKind::FeatureNotSupported,
                format!(
                    "{statement} starts an in-process compute node, which a cluster does not have; start a compute process instead (ebbflow compute --meta ADDR ...)"
                ),
            ));
        }
        Ok(())
    }

    /// A compute process registers: a new worker with `units` parallel
    /// units, or — when a worker with the same address is known — that
    /// worker again, with its id and units (a process restarted on the
    /// same address). If the old incarnation still had actors, every job
    /// is recovered (they died with it). `connect` makes the client of the
    /// worker id meta settled on.
    pub async fn join_remote(
        &self,
        address: &str,
        units: u32,
        connect: impl FnOnce(WorkerId) -> NodeResult<Arc<dyn ComputeClient>>,
    ) -> MetaResult<(WorkerId, Vec<UnitId>)> {
        if units == 0 || units > MAX_UNITS_PER_NODE {
            return Err(MetaError::new(
                ErrorKind::InvalidParameterValue,
                format!("parallel_units must be between 1 and {MAX_UNITS_PER_NODE}, got {units}"),
            ));
        }
        let _ddl = self.ddl_lock.lock().await;
        let (id, unit_ids, lost_actors) = {
            let mut st = self.state.lock();
            let known = st
                .workers
                .values()
                .find(|w| w.host == address)
                .map(|w| w.id);
            let id = known.unwrap_or(st.next_worker_id + 1);
            let client = connect(id)
                .map_err(|e| MetaError::new(ErrorKind::ConnectionFailure, e.to_string()))?;
            // The old incarnation died with actors meta has not moved yet.
            let lost = st
                .workers
                .get(&id)
                .is_some_and(|w| w.state != WorkerState::Down && st.actors_on(id) > 0);
            match st.workers.get_mut(&id) {
                Some(w) => {
                    let old = std::mem::replace(&mut w.node, client.clone());
                    old.kill();
                    w.state = WorkerState::Running;
                }
                None => {
                    st.next_worker_id = id;
                    let first = st.next_unit_id;
                    st.next_unit_id += units;
                    st.workers.insert(
                        id,
                        Worker {
                            id,
                            host: address.to_string(),
                            state: WorkerState::Running,
                            units: (first..first + units).collect(),
                            node: client.clone(),
                        },
                    );
                }
            }
            self.nodes.write().insert(id, client);
            let unit_ids = st
                .workers
                .get(&id)
                .map(|w| w.units.clone())
                .unwrap_or_default();
            (id, unit_ids, lost)
        };
        if lost_actors {
            let _ = self.services.events.send(ComputeEvent::Recover {
                reason: format!("compute node {id} ({address}) restarted"),
            });
        }
        self.commit_membership().await;
        tracing::info!(worker = id, %address, units = unit_ids.len(), "compute process registered");
        self.policy_wake.notify_one();
        self.nodes_changed.notify_one();
        Ok((id, unit_ids))
    }

    /// Whether worker `id` was removed (its process is to exit).
    pub fn worker_removed(&self, id: WorkerId) -> bool {
        self.removed_workers.lock().contains(&id)
    }

    /// A heartbeat of compute process `id`; false when meta does not know
    /// it (removed, down, or not registered since meta started).
    pub fn worker_heartbeat(&self, id: WorkerId) -> bool {
        let st = self.state.lock();
        st.workers
            .get(&id)
            .filter(|w| w.state != WorkerState::Down)
            .is_some_and(|w| w.node.heartbeat())
    }

    /// `ALTER SYSTEM RESTART WORKER id`: bring a `down` node back with its
    /// id and units.
    pub async fn restart_worker(&self, id: WorkerId) -> MetaResult<()> {
        self.refuse_in_cluster("ALTER SYSTEM RESTART WORKER")?;
        let _ddl = self.ddl_lock.lock().await;
        {
            let mut st = self.state.lock();
            let w = st.worker(id)?;
            if w.state != WorkerState::Down {
                return Err(MetaError::new(
                    ErrorKind::ObjectNotInPrerequisiteState,
                    format!("compute node {id} is {}, not down", w.state.name()),
                ));
            }
            let node = self.start_node(id);
            if let Some(w) = st.workers.get_mut(&id) {
                w.node = node;
                w.state = WorkerState::Running;
            }
        }
        self.commit_membership().await;
        tracing::info!(worker = id, "compute node restarted");
        self.policy_wake.notify_one();
        self.nodes_changed.notify_one();
        Ok(())
    }

    /// `ALTER SYSTEM REMOVE WORKER id`: only a node that holds no actors.
    pub async fn remove_worker(&self, id: WorkerId) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        {
            let mut st = self.state.lock();
            let w = st.worker(id)?;
            let actors = st.actors_on(id);
            if actors > 0 {
                return Err(MetaError::new(
                    ErrorKind::ObjectInUse,
                    format!(
                        "compute node {id} still runs {actors} actors; drain it first with ALTER SYSTEM RESCHEDULE DRAIN WORKER {id}"
                    ),
                ));
            }
            let others_running = st
                .workers
                .values()
                .any(|o| o.id != id && o.state == WorkerState::Running);
            if w.state == WorkerState::Running && !others_running {
                return Err(MetaError::new(
                    ErrorKind::ObjectNotInPrerequisiteState,
                    format!("compute node {id} is the last running compute node"),
                ));
            }
            self.removed_workers.lock().insert(id);
            if let Some(w) = st.workers.remove(&id) {
                w.node.kill();
            }
            self.nodes.write().remove(&id);
        }
        self.commit_membership().await;
        tracing::info!(worker = id, "compute node removed");
        Ok(())
    }

    /// `ALTER SYSTEM RESCHEDULE DRAIN WORKER id [DRY RUN]`: mark the node
    /// `draining` and move every actor off it with one barrier, keeping
    /// each fragment's parallelism where enough units remain (adaptive jobs
    /// shrink otherwise; fixed and custom jobs refuse). A dry run returns
    /// the plan and changes nothing.
    pub async fn drain_worker(&self, id: WorkerId, dry_run: bool) -> MetaResult<ScaleSummary> {
        let _ddl = self.ddl_lock.lock().await;
        let (plan, old_state) = {
            let mut st = self.state.lock();
            let w = st.worker(id)?;
            let old_state = w.state;
            if old_state == WorkerState::Down {
                return Err(MetaError::new(
                    ErrorKind::ObjectNotInPrerequisiteState,
                    format!("compute node {id} is down; its actors were already moved"),
                ));
            }
            let others_running = st
                .workers
                .values()
                .any(|o| o.id != id && o.state == WorkerState::Running);
            if !others_running {
                return Err(MetaError::new(
                    ErrorKind::ObjectNotInPrerequisiteState,
                    format!(
                        "cannot drain compute node {id}: no other compute node is running to take its actors"
                    ),
                ));
            }
            if let Some(w) = st.workers.get_mut(&id) {
                w.state = WorkerState::Draining;
            }
            let (plan, short) = st.cluster_plan(Sizing::Keep);
            let restore = |st: &mut MetaState| {
                if let Some(w) = st.workers.get_mut(&id) {
                    w.state = old_state;
                }
            };
            if !short.is_empty() {
                let avail = st.running_units().len();
                restore(&mut st);
                let jobs: Vec<String> = short
                    .iter()
                    .map(|s| format!("\"{}\" ({} actors)", s.job, s.actors))
                    .collect();
                return Err(MetaError::new(
                    ErrorKind::InsufficientResources,
                    format!(
                        "cannot drain compute node {id}: {avail} parallel units would remain, too few for {}; lower their parallelism first",
                        jobs.join(", ")
                    ),
                ));
            }
            if dry_run {
                restore(&mut st);
            }
            (plan, old_state)
        };
        if dry_run {
            return self.preview_reschedule(&plan);
        }
        let statement = format!("ALTER SYSTEM RESCHEDULE DRAIN WORKER {id}");
        let result = if plan.is_empty() {
            self.persist_catalog()
                .await
                .map(|_| ScaleSummary::default())
        } else {
            self.apply_reschedule_locked(plan, &statement, ScaleKind::Automatic)
                .await
        };
        if result.is_err() {
            if let Some(w) = self.state.lock().workers.get_mut(&id) {
                w.state = old_state;
            }
        }
        result
    }

    /// Test fault: stop compute node `id` abruptly (`kill`) or make every
    /// task of it panic (`panic`).
    pub fn inject_worker_failure(&self, id: WorkerId, panic: bool) -> MetaResult<()> {
        let st = self.state.lock();
        let w = st.worker(id)?;
        if w.state == WorkerState::Down {
            return Err(MetaError::new(
                ErrorKind::ObjectNotInPrerequisiteState,
                format!("compute node {id} is already down"),
            ));
        }
        tracing::warn!(worker = id, panic, "injecting a compute node failure");
        if panic {
            w.node.inject_panic();
        } else {
            w.node.kill();
        }
        Ok(())
    }

    /// After a recovery found nodes down: their actors go to the surviving
    /// units (in place: the recovery rebuilds every actor). Returns the
    /// summary when something moved.
    pub(super) fn fail_over(&self) -> Option<ScaleSummary> {
        let mut st = self.state.lock();
        let (plan, short) = st.cluster_plan(Sizing::Keep);
        if plan.is_empty() {
            return None;
        }
        for s in short {
            tracing::warn!(job = %s.job, actors = s.actors, "too few parallel units left: the job runs with fewer actors until units come back");
        }
        let layouts = st.apply_layouts(&plan);
        Some(ScaleSummary {
            fragments: layouts.into_iter().map(|l| l.summary).collect(),
            ..Default::default()
        })
    }

    /// One tick of the adaptive policy: resize the jobs that do not match
    /// the cluster. Returns whether anything changed.
    pub async fn adaptive_tick(&self) -> MetaResult<bool> {
        let _ddl = self.ddl_lock.lock().await;
        // A recovery rebuilds the layout first (and moves the actors of
        // nodes that are down).
        if self.recovering.load(std::sync::atomic::Ordering::SeqCst)
            || self.failure_state.is_failed()
        {
            return Ok(false);
        }
        let plan = {
            let st = self.state.lock();
            let down_with_actors = st
                .workers
                .values()
                .any(|w| w.state == WorkerState::Down && st.actors_on(w.id) > 0);
            if !st.params.adaptive_scaling || down_with_actors {
                return Ok(false);
            }
            st.cluster_plan(Sizing::Policy).0
        };
        if plan.is_empty() {
            return Ok(false);
        }
        self.apply_reschedule_locked(plan, "adaptive", ScaleKind::Automatic)
            .await?;
        Ok(true)
    }

    /// `ALTER SYSTEM SET backfill_rows_per_barrier`.
    pub fn set_backfill_rows_per_barrier(&self, rows: usize) {
        self.state.lock().params.backfill_rows_per_barrier = rows;
        ebbflow_stream::executor::stream_scan::set_backfill_rows_per_barrier(rows);
        self.persist_catalog_soon();
    }

    /// Set a system parameter of the adaptive policy.
    pub fn set_adaptive_scaling(&self, on: Option<bool>, interval_ms: Option<u64>) {
        {
            let mut st = self.state.lock();
            if let Some(on) = on {
                st.params.adaptive_scaling = on;
            }
            if let Some(ms) = interval_ms {
                st.params.adaptive_scaling_interval_ms = ms;
            }
        }
        self.persist_catalog_soon();
        self.policy_wake.notify_one();
    }
}

/// Every [`HEARTBEAT_INTERVAL`], mark nodes that stopped beating down and
/// tell the barrier manager, which then fails the barrier in flight (or the
/// next) and starts a recovery that moves their actors.
pub(super) async fn failure_detector(meta: Weak<Meta>) {
    loop {
        tokio::time::sleep(HEARTBEAT_INTERVAL).await;
        let Some(meta) = meta.upgrade() else { return };
        let down = meta.state.lock().mark_dead_workers();
        for worker in down {
            let _ = meta
                .services
                .events
                .send(ComputeEvent::WorkerDown { worker });
        }
    }
}

/// The adaptive policy: every `adaptive_scaling_interval_ms` (or at once
/// when woken), resize jobs that do not match the cluster.
pub(super) async fn adaptive_policy(meta: Weak<Meta>) {
    loop {
        let (interval, wake) = {
            let Some(meta) = meta.upgrade() else { return };
            let ms = meta.state.lock().params.adaptive_scaling_interval_ms;
            (Duration::from_millis(ms.max(10)), meta.policy_wake.clone())
        };
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = wake.notified() => {}
        }
        let Some(meta) = meta.upgrade() else { return };
        let started = Instant::now();
        match meta.adaptive_tick().await {
            Ok(true) => tracing::info!(
                ms = started.elapsed().as_secs_f64() * 1000.0,
                "adaptive policy resized jobs"
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "adaptive policy could not resize jobs"),
        }
    }
}
