//! Compute nodes, their parallel units, and where new actors go.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ebbflow_stream::compute_node::{ComputeClient, NodeError, NodeResult, WorkerId};

pub use ebbflow_common::UnitId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WorkerState {
    Running,
    /// Being emptied (or emptied) by a drain: no new actors go there.
    Draining,
    /// Stopped or failed: its actors were moved to the surviving units.
    Down,
}

impl WorkerState {
    pub fn name(self) -> &'static str {
        match self {
            WorkerState::Running => "running",
            WorkerState::Draining => "draining",
            WorkerState::Down => "down",
        }
    }
}

pub struct Worker {
    pub id: WorkerId,
    pub host: String,
    pub state: WorkerState,
    pub units: Vec<UnitId>,
    pub node: Arc<dyn ComputeClient>,
}

/// The client of a worker of the committed catalog whose process has not
/// registered since meta started: alive for a heartbeat timeout (time for
/// the process to come back), refusing every call.
pub struct Unconnected {
    since: std::time::Instant,
}

impl Unconnected {
    pub fn new() -> Unconnected {
        Unconnected {
            since: std::time::Instant::now(),
        }
    }
}

impl Default for Unconnected {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait::async_trait]
impl ComputeClient for Unconnected {
    fn is_alive(&self, timeout: std::time::Duration) -> bool {
        self.since.elapsed() < timeout
    }
    fn kill(&self) {}
    fn inject_panic(&self) {}
    async fn build_actors(&self, _descs: Vec<ebbflow_plan::ActorDesc>) -> NodeResult<()> {
        Err(NodeError::NotRegistered)
    }
    fn local_sender(
        &self,
        _actor: ebbflow_stream::message::ActorId,
    ) -> Option<ebbflow_stream::channel::Sender> {
        None
    }
    fn forget_actors(&self, _ids: &[ebbflow_stream::message::ActorId]) {}
    fn abort_all(&self) {}
    async fn reset(&self, _generation: u64) -> NodeResult<()> {
        Err(NodeError::NotRegistered)
    }
    fn actor_count(&self) -> usize {
        0
    }
}

/// What the catalog keeps of a worker.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct WorkerInfo {
    pub id: WorkerId,
    pub host: String,
    pub state: WorkerState,
    pub units: Vec<UnitId>,
}

impl Worker {
    pub fn info(&self) -> WorkerInfo {
        WorkerInfo {
            id: self.id,
            host: self.host.clone(),
            state: self.state,
            units: self.units.clone(),
        }
    }
}

/// The host name shown for an in-process compute node.
pub fn host_of(id: WorkerId) -> String {
    format!("127.0.0.1:{}", 5687 + id)
}

/// Placement of one fragment's actors over the running units: spread
/// evenly over compute nodes first, then over units, least loaded first.
pub struct Placement<'a> {
    workers: &'a BTreeMap<WorkerId, Worker>,
    /// Actors (of every fragment) per unit.
    load: HashMap<UnitId, usize>,
}

impl<'a> Placement<'a> {
    pub fn new(
        workers: &'a BTreeMap<WorkerId, Worker>,
        units_in_use: impl Iterator<Item = UnitId>,
    ) -> Self {
        let mut load = HashMap::new();
        for u in units_in_use {
            *load.entry(u).or_insert(0) += 1;
        }
        Placement { workers, load }
    }

    fn worker_load(&self, w: &Worker) -> usize {
        w.units
            .iter()
            .map(|u| self.load.get(u).copied().unwrap_or(0))
            .sum()
    }

    /// `k` running units for new actors of a fragment that keeps actors on
    /// `current`: each goes to the node with fewest actors of the fragment,
    /// then the least loaded unit and node.
    pub fn pick(&mut self, current: &[(WorkerId, UnitId)], k: usize) -> Vec<(WorkerId, UnitId)> {
        let mut mine: HashMap<WorkerId, usize> = HashMap::new();
        for (w, _) in current {
            *mine.entry(*w).or_insert(0) += 1;
        }
        let mut taken: Vec<UnitId> = current.iter().map(|(_, u)| *u).collect();
        let mut out = Vec::new();
        for _ in 0..k {
            let best = self
                .workers
                .values()
                .filter(|w| w.state == WorkerState::Running)
                .flat_map(|w| w.units.iter().map(move |u| (w, *u)))
                .filter(|(_, u)| !taken.contains(u))
                .min_by_key(|(w, u)| {
                    (
                        mine.get(&w.id).copied().unwrap_or(0),
                        self.load.get(u).copied().unwrap_or(0),
                        self.worker_load(w),
                        *u,
                    )
                })
                .map(|(w, u)| (w.id, u));
            let Some((w, u)) = best else { break };
            *mine.entry(w).or_insert(0) += 1;
            *self.load.entry(u).or_insert(0) += 1;
            taken.push(u);
            out.push((w, u));
        }
        out
    }

    /// `k` of `current` to give up: from the node with most actors of the
    /// fragment, then the most loaded unit.
    pub fn pick_removals(&mut self, current: &[(WorkerId, UnitId)], k: usize) -> Vec<UnitId> {
        let mut left: Vec<(WorkerId, UnitId)> = current.to_vec();
        let mut out = Vec::new();
        for _ in 0..k.min(left.len()) {
            let mut mine: HashMap<WorkerId, usize> = HashMap::new();
            for (w, _) in &left {
                *mine.entry(*w).or_insert(0) += 1;
            }
            let Some(i) = (0..left.len()).max_by_key(|&i| {
                let (w, u) = left[i];
                (mine[&w], self.load.get(&u).copied().unwrap_or(0), u)
            }) else {
                break;
            };
            let (_, u) = left.remove(i);
            if let Some(l) = self.load.get_mut(&u) {
                *l = l.saturating_sub(1);
            }
            out.push(u);
        }
        out
    }

    /// Forget one actor on `unit` (it is being removed).
    pub fn release(&mut self, unit: UnitId) {
        if let Some(l) = self.load.get_mut(&unit) {
            *l = l.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebbflow_storage::MemoryStateStore;
    use ebbflow_stream::compute_node::{ComputeNode, NodeServices};
    use ebbflow_stream::exchange::ExchangeRegistry;

    /// `units[i]` units on node i + 1, unit ids in node order.
    fn cluster(units: &[u32]) -> BTreeMap<WorkerId, Worker> {
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let (_, committed) = tokio::sync::watch::channel(0);
        let services = NodeServices {
            store: Arc::new(MemoryStateStore::new()),
            registry: Arc::new(ExchangeRegistry::default()),
            events,
            readable: committed.clone(),
            committed,
            fault: Arc::new(std::sync::atomic::AtomicU32::new(0)),
        };
        let mut next = 0;
        units
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let id = i as WorkerId + 1;
                let w = Worker {
                    id,
                    host: host_of(id),
                    state: WorkerState::Running,
                    units: (next..next + n).collect(),
                    node: Arc::new(ComputeNode::new(id, &services)),
                };
                next += n;
                (id, w)
            })
            .collect()
    }

    fn per_worker(picks: &[(WorkerId, UnitId)]) -> BTreeMap<WorkerId, usize> {
        let mut m = BTreeMap::new();
        for (w, _) in picks {
            *m.entry(*w).or_insert(0) += 1;
        }
        m
    }

    #[tokio::test]
    async fn a_fragment_spreads_over_nodes_then_units() {
        let workers = cluster(&[2, 2, 2]);
        let mut p = Placement::new(&workers, std::iter::empty());
        let three = p.pick(&[], 3);
        assert_eq!(per_worker(&three), BTreeMap::from([(1, 1), (2, 1), (3, 1)]));
        // the next fragment prefers the units the first left free
        let next = p.pick(&[], 3);
        assert!(
            next.iter().all(|x| !three.contains(x)),
            "{three:?} {next:?}"
        );
        // growing a fragment on nodes 1 and 1 goes to nodes 2 and 3 first
        let grow = p.pick(&[(1, 0), (1, 1)], 2);
        assert_eq!(per_worker(&grow), BTreeMap::from([(2, 1), (3, 1)]));
    }

    #[tokio::test]
    async fn draining_and_down_nodes_get_nothing() {
        let mut workers = cluster(&[2, 2, 2]);
        if let Some(w) = workers.get_mut(&2) {
            w.state = WorkerState::Draining;
        }
        if let Some(w) = workers.get_mut(&3) {
            w.state = WorkerState::Down;
        }
        let mut p = Placement::new(&workers, std::iter::empty());
        assert_eq!(p.pick(&[], 6), vec![(1, 0), (1, 1)]);
    }

    #[tokio::test]
    async fn removals_come_from_the_most_crowded_node() {
        let workers = cluster(&[3, 1]);
        let mut p = Placement::new(&workers, [0, 1, 2, 3].into_iter());
        let cur = [(1, 0), (1, 1), (1, 2), (2, 3)];
        let removed = p.pick_removals(&cur, 2);
        assert_eq!(removed.len(), 2);
        assert!(removed.iter().all(|u| *u < 3), "{removed:?}");
    }
}
