//! The cluster as the catalogs show it — compute nodes and their units
//! (`rw_worker_nodes`, `rw_parallel_units`), actors (`rw_actors`),
//! fragments (`rw_fragments`) and the parallelism of each job
//! (`rw_table_fragments`) — and the invariants it must satisfy after
//! every operation, whatever happened before.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use tokio_postgres::Client;

use super::common::rows::{cell, Row};
use super::eb_run;

/// Virtual nodes of every fragment (spread over its actors).
pub const VNODES: u32 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Running,
    Draining,
    Down,
}

impl State {
    fn parse(s: &str) -> Option<State> {
        match s {
            "running" => Some(State::Running),
            "draining" => Some(State::Draining),
            "down" => Some(State::Down),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worker {
    pub state: State,
    pub units: BTreeSet<u32>,
    /// `rw_worker_nodes.parallelism`: must be the number of units.
    pub parallelism: u32,
}

/// A job's parallelism as `rw_table_fragments` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Par {
    Adaptive,
    Fixed(usize),
    /// Set by a manual reschedule that resized a fragment.
    Custom,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    pub id: u32,
    pub worker: u32,
    pub unit: u32,
    pub vnodes: u32,
}

/// One consistent reading of the catalogs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub workers: BTreeMap<u32, Worker>,
    /// Fragment → its actors, by unit.
    pub actors: BTreeMap<u32, Vec<Actor>>,
    /// Fragment → (owning job, whether it is a singleton).
    pub frags: BTreeMap<u32, (u32, bool)>,
    /// Fragment → `rw_fragments.parallelism`: must be its actor count.
    pub frag_par: BTreeMap<u32, u32>,
    /// Job (table or MV id) → parallelism.
    pub jobs: BTreeMap<u32, Par>,
}

fn int(c: &Option<String>) -> u32 {
    cell(c).unwrap_or(u32::MAX)
}

fn text(c: &Option<String>) -> &str {
    c.as_deref().unwrap_or("NULL")
}

impl Snapshot {
    /// Reads the catalogs. They are separate statements: the nodes,
    /// actors and fragments are read before and after the parallelism of
    /// the jobs and must agree (else it reads again), so that everything
    /// belongs to one moment even while the adaptive policy acts.
    pub async fn read(c: &Client) -> Result<Snapshot, String> {
        const ACTORS: &str =
            "SELECT actor_id, fragment_id, worker_id, parallel_unit_id, vnode_count FROM rw_actors";
        const FRAGMENTS: &str =
            "SELECT fragment_id, table_id, distribution_type, parallelism FROM rw_fragments";
        for _ in 0..10 {
            let workers = read_workers(c).await?;
            let actor_rows = eb_run(c, ACTORS).await?;
            let frag_rows = eb_run(c, FRAGMENTS).await?;
            let job_rows =
                eb_run(c, "SELECT table_id, parallelism FROM rw_table_fragments").await?;
            if read_workers(c).await? != workers
                || eb_run(c, ACTORS).await? != actor_rows
                || eb_run(c, FRAGMENTS).await? != frag_rows
            {
                continue;
            }
            return Snapshot::parse(workers, &actor_rows, &frag_rows, &job_rows);
        }
        Err("the catalogs changed under ten reads in a row".into())
    }

    fn parse(
        workers: BTreeMap<u32, Worker>,
        actor_rows: &[Row],
        frag_rows: &[Row],
        job_rows: &[Row],
    ) -> Result<Snapshot, String> {
        let mut actors: BTreeMap<u32, Vec<Actor>> = BTreeMap::new();
        for r in actor_rows {
            actors.entry(int(&r[1])).or_default().push(Actor {
                id: int(&r[0]),
                worker: int(&r[2]),
                unit: int(&r[3]),
                vnodes: int(&r[4]),
            });
        }
        for v in actors.values_mut() {
            v.sort_by_key(|a| (a.unit, a.id));
        }
        let frags = frag_rows
            .iter()
            .map(|r| (int(&r[0]), (int(&r[1]), text(&r[2]) == "single")))
            .collect();
        let frag_par = frag_rows.iter().map(|r| (int(&r[0]), int(&r[3]))).collect();
        let mut jobs = BTreeMap::new();
        for r in job_rows {
            let par = match text(&r[1]) {
                "adaptive" => Par::Adaptive,
                "custom" => Par::Custom,
                n => Par::Fixed(
                    n.parse()
                        .map_err(|_| format!("rw_table_fragments: parallelism {n:?}"))?,
                ),
            };
            jobs.insert(int(&r[0]), par);
        }
        Ok(Snapshot {
            workers,
            actors,
            frags,
            frag_par,
            jobs,
        })
    }

    pub fn state(&self, w: u32) -> Option<State> {
        self.workers.get(&w).map(|w| w.state)
    }

    pub fn running(&self) -> Vec<u32> {
        self.in_state(State::Running)
    }

    pub fn in_state(&self, s: State) -> Vec<u32> {
        self.workers
            .iter()
            .filter(|(_, w)| w.state == s)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Units of running nodes, except those of `except`.
    pub fn running_units_except(&self, except: Option<u32>) -> BTreeSet<u32> {
        self.workers
            .iter()
            .filter(|(id, w)| w.state == State::Running && Some(**id) != except)
            .flat_map(|(_, w)| w.units.iter().copied())
            .collect()
    }

    pub fn running_units(&self) -> BTreeSet<u32> {
        self.running_units_except(None)
    }

    /// Units of nodes that are not running.
    pub fn idle_units(&self) -> BTreeSet<u32> {
        self.workers
            .values()
            .filter(|w| w.state != State::Running)
            .flat_map(|w| w.units.iter().copied())
            .collect()
    }

    pub fn actors_on(&self, worker: u32) -> usize {
        self.actors
            .values()
            .flatten()
            .filter(|a| a.worker == worker)
            .count()
    }

    /// Per fragment, its actors on `worker` (fragments with none left out).
    pub fn fragments_on(&self, worker: u32) -> BTreeMap<u32, usize> {
        let mut out = BTreeMap::new();
        for (f, actors) in &self.actors {
            let n = actors.iter().filter(|a| a.worker == worker).count();
            if n > 0 {
                out.insert(*f, n);
            }
        }
        out
    }

    pub fn count(&self, f: u32) -> usize {
        self.actors.get(&f).map_or(0, Vec::len)
    }

    pub fn units(&self, f: u32) -> BTreeSet<u32> {
        self.actors
            .get(&f)
            .map(|v| v.iter().map(|a| a.unit).collect())
            .unwrap_or_default()
    }

    pub fn par(&self, f: u32) -> Par {
        self.frags
            .get(&f)
            .and_then(|(job, _)| self.jobs.get(job))
            .copied()
            .unwrap_or(Par::Adaptive)
    }

    pub fn single(&self, f: u32) -> bool {
        self.frags.get(&f).is_some_and(|x| x.1)
    }

    pub fn hash_frags(&self) -> Vec<u32> {
        self.frags
            .iter()
            .filter(|(_, v)| !v.1)
            .map(|(k, _)| *k)
            .collect()
    }

    pub fn job_frags(&self, job: u32) -> Vec<u32> {
        self.frags
            .iter()
            .filter(|(_, v)| v.0 == job)
            .map(|(k, _)| *k)
            .collect()
    }

    /// Jobs with a fixed or custom parallelism that a drain of `worker`
    /// cannot keep: a hash fragment with more actors than the running
    /// units left. Sorted job ids.
    pub fn drain_shortfall(&self, worker: u32) -> BTreeSet<u32> {
        let avail = self.running_units_except(Some(worker)).len();
        self.hash_frags()
            .into_iter()
            .filter(|&f| self.par(f) != Par::Adaptive && self.count(f) > avail)
            .map(|f| self.frags[&f].0)
            .collect()
    }

    /// What must hold at any time: every actor on a unit of its node, and
    /// that node running; a singleton fragment has one actor; a hash
    /// fragment has at least one actor, on distinct units, at most one per
    /// running unit and at most its fixed parallelism, its actors owning
    /// all `VNODES` vnodes.
    pub fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        let running = self.running_units().len();
        for (id, w) in &self.workers {
            if w.parallelism as usize != w.units.len() {
                out.push(format!(
                    "rw_worker_nodes says node {id} has parallelism {}, rw_parallel_units gives \
                     it {} units",
                    w.parallelism,
                    w.units.len()
                ));
            }
        }
        for (f, actors) in &self.actors {
            if !self.frags.contains_key(f) {
                out.push(format!("actors of fragment {f}, which rw_fragments lacks"));
            }
            for a in actors {
                match self.workers.get(&a.worker) {
                    None => out.push(format!(
                        "actor {} (fragment {f}) is on compute node {}, which does not exist",
                        a.id, a.worker
                    )),
                    Some(w) if w.state != State::Running => out.push(format!(
                        "actor {} (fragment {f}) is on compute node {}, which is {:?}",
                        a.id, a.worker, w.state
                    )),
                    Some(w) if !w.units.contains(&a.unit) => out.push(format!(
                        "actor {} (fragment {f}) is on unit {}, which is not one of compute \
                         node {}'s units {:?}",
                        a.id, a.unit, a.worker, w.units
                    )),
                    Some(_) => {}
                }
            }
        }
        for (&f, &(job, single)) in &self.frags {
            let n = self.count(f);
            let units = self.units(f);
            let vnodes: u32 = self
                .actors
                .get(&f)
                .map_or(0, |v| v.iter().map(|a| a.vnodes).sum());
            if single && n != 1 {
                out.push(format!("singleton fragment {f} has {n} actors"));
            }
            if self.frag_par.get(&f) != Some(&(n as u32)) {
                out.push(format!(
                    "rw_fragments says fragment {f} has parallelism {:?}, rw_actors shows {n} \
                     actors",
                    self.frag_par.get(&f)
                ));
            }
            if n == 0 {
                out.push(format!("fragment {f} has no actor"));
                continue;
            }
            if units.len() != n {
                out.push(format!(
                    "fragment {f} has {n} actors on {} distinct units",
                    units.len()
                ));
            }
            if !single && n > running {
                out.push(format!(
                    "fragment {f} has {n} actors but only {running} units run"
                ));
            }
            if let Some(Par::Fixed(p)) = self.jobs.get(&job) {
                if n > *p && !single {
                    out.push(format!(
                        "fragment {f} of job {job} with parallelism {p} has {n} actors"
                    ));
                }
            }
            if vnodes != VNODES {
                out.push(format!(
                    "the actors of fragment {f} own {vnodes} vnodes, not {VNODES}"
                ));
            }
        }
        out
    }

    /// With the adaptive policy on and no change pending, what must hold
    /// too: adaptive jobs on every running unit, fixed ones at their
    /// parallelism (as far as the units allow). `None` when it holds.
    pub fn unsettled(&self) -> Option<String> {
        let units = self.running_units();
        let mut out = String::new();
        for f in self.hash_frags() {
            match self.par(f) {
                Par::Adaptive if self.units(f) != units => {
                    let _ = write!(
                        out,
                        "adaptive fragment {f} on units {:?}, running units {units:?}; ",
                        self.units(f)
                    );
                }
                Par::Fixed(n) if self.count(f) != n.min(units.len()) => {
                    let _ = write!(
                        out,
                        "fragment {f} with parallelism {n} has {} actors ({} units run); ",
                        self.count(f),
                        units.len()
                    );
                }
                _ => {}
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// One line per node: `id state units [actors]`.
    pub fn describe(&self) -> String {
        self.workers
            .iter()
            .map(|(id, w)| {
                format!(
                    "node {id} {:?} units {:?} actors {}",
                    w.state,
                    w.units,
                    self.actors_on(*id)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

async fn read_workers(c: &Client) -> Result<BTreeMap<u32, Worker>, String> {
    let nodes = eb_run(c, "SELECT id, state, parallelism FROM rw_worker_nodes").await?;
    let units = eb_run(c, "SELECT id, worker_id FROM rw_parallel_units").await?;
    let mut out = BTreeMap::new();
    for r in &nodes {
        let state = State::parse(text(&r[1]))
            .ok_or_else(|| format!("rw_worker_nodes: state {:?}", r[1]))?;
        out.insert(
            int(&r[0]),
            Worker {
                state,
                units: BTreeSet::new(),
                parallelism: int(&r[2]),
            },
        );
    }
    for r in &units {
        let Some(w) = out.get_mut(&int(&r[1])) else {
            return Err(format!(
                "rw_parallel_units: unit {} of compute node {}, which rw_worker_nodes lacks",
                text(&r[0]),
                text(&r[1])
            ));
        };
        w.units.insert(int(&r[0]));
    }
    Ok(out)
}
