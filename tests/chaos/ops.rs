//! The operations of the chaos test. [`Chaos`] picks one at random,
//! given the cluster as it is now, and says what must come of it: success,
//! or the SQLSTATE of the refusal (which must change nothing).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use rand::rngs::StdRng;
use rand::seq::{IteratorRandom, SliceRandom};
use rand::Rng;

use super::cluster::{Snapshot, State};
use super::MAX_NODES;

/// The parallel units of a node added without `WITH (parallel_units = n)`
/// (the playground's `--parallel-units`).
pub const DEFAULT_UNITS: u32 = 2;

/// A node id that never exists (ids grow from 1, one per node added).
const UNKNOWN_NODE: u32 = 900;

pub enum Kind {
    Add {
        units: Option<u32>,
    },
    Drain {
        id: u32,
        dry: bool,
    },
    Remove {
        id: u32,
    },
    /// Faults: per node, its `debug_kill_worker` or `debug_panic_worker`
    /// statement and the ms to wait before it; `during`: a scale statement
    /// sent just before them, running while they land.
    Fail {
        faults: Vec<(u32, String, u64)>,
        during: Option<String>,
    },
    Restart {
        id: u32,
    },
    /// `SET PARALLELISM = n`, ADAPTIVE when `None`.
    SetPar {
        job: u32,
        n: Option<usize>,
    },
    /// A manual plan and the units each fragment must be on after it.
    Reschedule {
        expect: BTreeMap<u32, BTreeSet<u32>>,
        dry: bool,
    },
    Adaptive(bool),
    /// A request checked only by its refusal.
    Bad,
}

pub struct Op {
    pub sql: String,
    pub kind: Kind,
    /// The SQLSTATE of the expected refusal; `None`: it must succeed.
    pub refusal: Option<&'static str>,
    /// Why it must be refused, for the failure message.
    pub why: String,
    /// Words the refusal's message must contain (the jobs a drain names).
    pub mention: Vec<String>,
    /// What kind of operation and outcome, for the coverage line.
    pub label: String,
}

impl Op {
    fn new(sql: String, kind: Kind, label: &str) -> Op {
        Op {
            sql,
            kind,
            refusal: None,
            why: String::new(),
            mention: Vec::new(),
            label: label.to_string(),
        }
    }

    /// The same request, expected to be refused.
    fn refused(mut self, refusal: Option<Refusal>) -> Op {
        if let Some(r) = refusal {
            let _ = write!(self.label, " {} ({})", r.code, r.tag);
            self.refusal = Some(r.code);
            self.why = r.why;
            self.mention = r.mention;
        }
        self
    }
}

/// An expected refusal: SQLSTATE, a short tag for the coverage line, why,
/// and words its message must contain.
pub struct Refusal {
    code: &'static str,
    tag: &'static str,
    why: String,
    mention: Vec<String>,
}

fn refusal(code: &'static str, tag: &'static str, why: String) -> Option<Refusal> {
    Some(Refusal {
        code,
        tag,
        why,
        mention: Vec::new(),
    })
}

/// The random generator of operations.
pub struct Chaos {
    pub rng: StdRng,
    /// Job id → (name, whether it is a table).
    pub names: BTreeMap<u32, (String, bool)>,
    /// The jobs with a fixed parallelism at creation (picked more often).
    pub fixed: Vec<u32>,
    /// The highest node id and unit id used so far: ids are never reused.
    pub max_node: u32,
    pub max_unit: u32,
    /// Whether the adaptive policy is on.
    pub adaptive: bool,
}

fn list(s: &BTreeSet<u32>) -> String {
    s.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

impl Chaos {
    /// The next operation for the cluster `s`.
    pub fn next(&mut self, s: &Snapshot) -> Op {
        if !self.adaptive && self.rng.gen_bool(0.15) {
            return Op::new(
                "ALTER SYSTEM SET adaptive_scaling = on".into(),
                Kind::Adaptive(true),
                "adaptive on",
            );
        }
        loop {
            let op = match self.rng.gen_range(0..100) {
                0..=11 => self.add(s),
                12..=31 => Some(self.drain(s)),
                32..=40 => Some(self.remove(s)),
                41..=53 => self.fail(s),
                54..=60 => self.restart(s),
                61..=69 => Some(self.set_parallelism(s)),
                70..=83 => self.reschedule(s, false),
                84..=87 => self.reschedule(s, true),
                88..=94 => Some(self.bad_reschedule(s)),
                _ if self.adaptive => Some(Op::new(
                    "ALTER SYSTEM SET adaptive_scaling = off".into(),
                    Kind::Adaptive(false),
                    "adaptive off",
                )),
                _ => None,
            };
            if let Some(op) = op {
                return op;
            }
        }
    }

    fn pick(&mut self, ids: &[u32]) -> Option<u32> {
        ids.choose(&mut self.rng).copied()
    }

    fn add(&mut self, s: &Snapshot) -> Option<Op> {
        if s.workers.len() >= MAX_NODES {
            return None;
        }
        if self.rng.gen_bool(0.05) {
            return Some(
                Op::new(
                    "ALTER SYSTEM ADD WORKER WITH (parallel_units = 0)".into(),
                    Kind::Bad,
                    "add",
                )
                .refused(refusal(
                    "22023",
                    "no units",
                    "a node needs at least one unit".into(),
                )),
            );
        }
        let units = match self.rng.gen_range(0..10) {
            0..=2 => None,
            3..=7 => Some(1),
            _ => Some(2),
        };
        let sql = match units {
            None => "ALTER SYSTEM ADD WORKER".to_string(),
            Some(n) => format!("ALTER SYSTEM ADD WORKER WITH (parallel_units = {n})"),
        };
        Some(Op::new(sql, Kind::Add { units }, "add"))
    }

    /// A node to act on: of one of `states` with probability `p`, else
    /// any node, else (rarely) one that does not exist.
    fn target(&mut self, s: &Snapshot, states: &[State], p: f64) -> u32 {
        if self.rng.gen_bool(0.06) {
            return UNKNOWN_NODE + self.rng.gen_range(0..50);
        }
        let preferred: Vec<u32> = s
            .workers
            .iter()
            .filter(|(_, w)| states.contains(&w.state))
            .map(|(id, _)| *id)
            .collect();
        if !preferred.is_empty() && self.rng.gen_bool(p) {
            return self.pick(&preferred).unwrap_or(UNKNOWN_NODE);
        }
        let all: Vec<u32> = s.workers.keys().copied().collect();
        self.pick(&all).unwrap_or(UNKNOWN_NODE)
    }

    fn drain(&mut self, s: &Snapshot) -> Op {
        let fits: Vec<u32> = s
            .running()
            .into_iter()
            .filter(|&w| drain_refusal(s, w, &self.names).is_none())
            .collect();
        let id = match self.pick(&fits) {
            Some(w) if self.rng.gen_bool(0.5) => w,
            _ => self.target(s, &[State::Running], 0.8),
        };
        let short = s.drain_shortfall(id);
        if s.state(id) == Some(State::Running) && !short.is_empty() && self.rng.gen_bool(0.5) {
            // What an operator does first: lower the parallelism of a job
            // that would not fit on the units left.
            let job = *short.iter().next().expect("a job");
            let avail = s.running_units_except(Some(id)).len();
            let n = Some(self.rng.gen_range(0..=avail)).filter(|n| *n > 0);
            return self.set_parallelism_of(s, job, n, "set parallelism (to drain)");
        }
        let dry = self.rng.gen_bool(0.25);
        let sql = format!(
            "ALTER SYSTEM RESCHEDULE DRAIN WORKER {id}{}",
            if dry { " DRY RUN" } else { "" }
        );
        let label = if dry { "drain dry run" } else { "drain" };
        Op::new(sql, Kind::Drain { id, dry }, label).refused(drain_refusal(s, id, &self.names))
    }

    fn remove(&mut self, s: &Snapshot) -> Op {
        // A running node without actors (the adaptive policy is off) may go.
        let idle: Vec<u32> = s
            .running()
            .into_iter()
            .filter(|&w| s.actors_on(w) == 0)
            .collect();
        let id = match self.pick(&idle) {
            Some(w) if self.rng.gen_bool(0.7) => w,
            _ => self.target(s, &[State::Draining, State::Down], 0.7),
        };
        let refused = match s.state(id) {
            None => refusal("42704", "unknown", format!("node {id} does not exist")),
            Some(_) if s.actors_on(id) > 0 => refusal(
                "55006",
                "busy",
                format!("node {id} holds {} actors", s.actors_on(id)),
            ),
            Some(State::Running) if s.running().len() == 1 => refusal(
                "55000",
                "last",
                format!("node {id} is the last running node"),
            ),
            Some(_) => None,
        };
        let label = match s.state(id) {
            Some(st) if refused.is_none() => format!("remove {st:?}").to_lowercase(),
            _ => "remove".into(),
        };
        Op::new(
            format!("ALTER SYSTEM REMOVE WORKER {id}"),
            Kind::Remove { id },
            &label,
        )
        .refused(refused)
    }

    /// Nodes that may fail: not down, and a running node other than them
    /// and `keep` remains.
    fn may_fail(&self, s: &Snapshot, keep: &[u32]) -> Vec<u32> {
        s.workers
            .iter()
            .filter(|(id, w)| {
                w.state != State::Down && s.running().iter().any(|r| r != *id && !keep.contains(r))
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// A fault statement for node `id`: kill or panic.
    fn fault_sql(&mut self, id: u32) -> (String, &'static str) {
        if self.rng.gen_bool(0.4) {
            (
                format!("ALTER SYSTEM SET debug_panic_worker = {id}"),
                "panic",
            )
        } else {
            (format!("ALTER SYSTEM SET debug_kill_worker = {id}"), "kill")
        }
    }

    /// Kill or panic a node whose loss leaves a running node; sometimes two
    /// nodes one after the other, or one while a scale runs; sometimes a
    /// node that is down already (refused).
    fn fail(&mut self, s: &Snapshot) -> Option<Op> {
        let candidates = self.may_fail(s, &[]);
        let down = s.in_state(State::Down);
        if !down.is_empty() && (candidates.is_empty() || self.rng.gen_bool(0.08)) {
            let id = self.pick(&down)?;
            let (sql, label) = self.fault_sql(id);
            return Some(Op::new(sql, Kind::Bad, label).refused(refusal(
                "55000",
                "down",
                format!("node {id} is down already"),
            )));
        }
        let id = self.pick(&candidates)?;
        let (sql, what) = self.fault_sql(id);
        match self.rng.gen_range(0..100) {
            0..=14 => {
                // A second fault while the first is noticed or recovered from.
                let second = self.may_fail(s, &[id]);
                let other =
                    self.pick(&second.into_iter().filter(|&w| w != id).collect::<Vec<_>>())?;
                let (sql2, _) = self.fault_sql(other);
                let gap = self.rng.gen_range(0..150);
                Some(Op::new(
                    format!("{sql}; /* after {gap} ms */ {sql2}"),
                    Kind::Fail {
                        faults: vec![(id, sql, 0), (other, sql2, gap)],
                        during: None,
                    },
                    "two faults",
                ))
            }
            15..=34 => {
                // A fault while a scale runs.
                let (scale, drained, label) = self.valid_scale(s)?;
                let keep: Vec<u32> = drained.into_iter().collect();
                let targets: Vec<u32> = self
                    .may_fail(s, &keep)
                    .into_iter()
                    .filter(|w| !keep.contains(w))
                    .collect();
                let id = self.pick(&targets)?;
                let (sql, _) = self.fault_sql(id);
                let gap = self.rng.gen_range(0..40);
                Some(Op::new(
                    format!("{scale}; /* after {gap} ms, while it runs */ {sql}"),
                    Kind::Fail {
                        faults: vec![(id, sql, gap)],
                        during: Some(scale),
                    },
                    &format!("fault during {label}"),
                ))
            }
            _ => {
                let label = format!("{what} {:?}", s.state(id)?).to_lowercase();
                Some(Op::new(
                    sql.clone(),
                    Kind::Fail {
                        faults: vec![(id, sql, 0)],
                        during: None,
                    },
                    &label,
                ))
            }
        }
    }

    /// A scale that is valid now: a drain (with the node drained), a
    /// reschedule or a SET PARALLELISM; with a label.
    fn valid_scale(&mut self, s: &Snapshot) -> Option<(String, Option<u32>, &'static str)> {
        match self.rng.gen_range(0..3) {
            0 => {
                let fits: Vec<u32> = s
                    .running()
                    .into_iter()
                    .filter(|&w| drain_refusal(s, w, &self.names).is_none())
                    .collect();
                let id = self.pick(&fits)?;
                Some((
                    format!("ALTER SYSTEM RESCHEDULE DRAIN WORKER {id}"),
                    Some(id),
                    "drain",
                ))
            }
            1 => {
                let op = self.reschedule(s, false)?;
                Some((op.sql, None, "reschedule"))
            }
            _ => {
                let op = self.set_parallelism(s);
                op.refusal
                    .is_none()
                    .then_some((op.sql, None, "set parallelism"))
            }
        }
    }

    fn restart(&mut self, s: &Snapshot) -> Option<Op> {
        if s.in_state(State::Down).is_empty() && self.rng.gen_bool(0.6) {
            return None;
        }
        let id = self.target(s, &[State::Down], 0.9);
        let refused = match s.state(id) {
            None => refusal("42704", "unknown", format!("node {id} does not exist")),
            Some(State::Down) => None,
            Some(st) => refusal(
                "55000",
                "not down",
                format!("node {id} is {st:?}, not down"),
            ),
        };
        Some(
            Op::new(
                format!("ALTER SYSTEM RESTART WORKER {id}"),
                Kind::Restart { id },
                "restart",
            )
            .refused(refused),
        )
    }

    fn set_parallelism(&mut self, s: &Snapshot) -> Op {
        let job = if self.rng.gen_bool(0.3) && !self.fixed.is_empty() {
            self.fixed[self.rng.gen_range(0..self.fixed.len())]
        } else {
            *self.names.keys().choose(&mut self.rng).expect("jobs")
        };
        let units = s.running_units().len();
        let n = match self.rng.gen_range(0..10) {
            0..=2 => None,
            3 => Some(units + self.rng.gen_range(1..=2)),
            _ => Some(self.rng.gen_range(1..=units.max(1))),
        };
        self.set_parallelism_of(s, job, n, "set parallelism")
    }

    /// `SET PARALLELISM = n` (ADAPTIVE for `None`) of `job`.
    fn set_parallelism_of(&mut self, s: &Snapshot, job: u32, n: Option<usize>, label: &str) -> Op {
        let (name, is_table) = self.names[&job].clone();
        let units = s.running_units().len();
        let kind = if is_table {
            "TABLE"
        } else {
            "MATERIALIZED VIEW"
        };
        let value = n.map_or("ADAPTIVE".to_string(), |n| n.to_string());
        let refused = match n {
            Some(n) if n > units => refusal(
                "22023",
                "too many",
                format!("{n} is above the {units} running units"),
            ),
            _ => None,
        };
        Op::new(
            format!("ALTER {kind} {name} SET PARALLELISM = {value}"),
            Kind::SetPar { job, n },
            label,
        )
        .refused(refused)
    }

    /// A plan item for fragment `f` over running units, and its result.
    fn plan_item(&mut self, s: &Snapshot, f: u32) -> Option<(String, BTreeSet<u32>)> {
        let cur = s.units(f);
        let free: Vec<u32> = s
            .running_units()
            .into_iter()
            .filter(|u| !cur.contains(u))
            .collect();
        let used: Vec<u32> = cur.iter().copied().collect();
        let (remove, add): (BTreeSet<u32>, BTreeSet<u32>) =
            if s.single(f) || (!free.is_empty() && self.rng.gen_bool(0.3)) {
                // Migration of one actor.
                let a = *free.choose(&mut self.rng)?;
                let r = *used.choose(&mut self.rng)?;
                ([r].into(), [a].into())
            } else {
                let mut tries = 0;
                loop {
                    tries += 1;
                    if tries > 20 {
                        return None;
                    }
                    let remove: BTreeSet<u32> = used
                        .iter()
                        .copied()
                        .filter(|_| self.rng.gen_bool(0.4))
                        .collect();
                    let add: BTreeSet<u32> = free
                        .iter()
                        .copied()
                        .filter(|_| self.rng.gen_bool(0.5))
                        .collect();
                    if cur.len() - remove.len() + add.len() >= 1
                        && !(remove.is_empty() && add.is_empty())
                    {
                        break (remove, add);
                    }
                }
            };
        let mut item = f.to_string();
        if !remove.is_empty() {
            let _ = write!(item, "-[{}]", list(&remove));
        }
        if !add.is_empty() {
            let _ = write!(item, "+[{}]", list(&add));
        }
        let new = cur.difference(&remove).chain(add.iter()).copied().collect();
        Some((item, new))
    }

    fn reschedule(&mut self, s: &Snapshot, dry: bool) -> Option<Op> {
        let n = if self.rng.gen_bool(0.2) { 3 } else { 1 };
        let frags: Vec<u32> = s.frags.keys().copied().choose_multiple(&mut self.rng, n);
        let mut items = Vec::new();
        let mut expect = BTreeMap::new();
        for f in frags {
            if let Some((item, new)) = self.plan_item(s, f) {
                items.push(item);
                expect.insert(f, new);
            }
        }
        if items.is_empty() {
            return None;
        }
        let sql = format!(
            "ALTER SYSTEM RESCHEDULE '{}'{}",
            items.join("; "),
            if dry { " DRY RUN" } else { "" }
        );
        let label = if dry {
            "reschedule dry run"
        } else {
            "reschedule"
        };
        Some(Op::new(sql, Kind::Reschedule { expect, dry }, label))
    }

    /// A plan adding an actor on a unit of a node that is not running
    /// (55000), or on a unit that does not exist (42704).
    fn bad_reschedule(&mut self, s: &Snapshot) -> Op {
        let f = *s
            .hash_frags()
            .choose(&mut self.rng)
            .expect("hash fragments");
        let idle: Vec<u32> = s.idle_units().into_iter().collect();
        let (u, refused) = match idle.choose(&mut self.rng) {
            Some(&u) if self.rng.gen_bool(0.85) => (
                u,
                refusal(
                    "55000",
                    "unit not running",
                    format!("unit {u} is on a node that is not running"),
                ),
            ),
            _ => {
                let u = self.max_unit + self.rng.gen_range(3..9);
                (
                    u,
                    refusal("42704", "unknown unit", format!("unit {u} does not exist")),
                )
            }
        };
        Op::new(
            format!("ALTER SYSTEM RESCHEDULE '{f}+[{u}]'"),
            Kind::Bad,
            "reschedule",
        )
        .refused(refused)
    }
}

/// Why a drain of node `id` must be refused, if it must (`names`: job
/// id → name, the jobs a shortfall must name).
fn drain_refusal(s: &Snapshot, id: u32, names: &BTreeMap<u32, (String, bool)>) -> Option<Refusal> {
    match s.state(id) {
        None => refusal("42704", "unknown", format!("node {id} does not exist")),
        Some(State::Down) => refusal("55000", "down", format!("node {id} is down")),
        Some(_) if !s.running().iter().any(|&w| w != id) => refusal(
            "55000",
            "last",
            format!("no running node other than {id} is left to take its actors"),
        ),
        Some(_) => {
            let short: Vec<String> = s
                .drain_shortfall(id)
                .iter()
                .map(|j| names.get(j).map_or(j.to_string(), |n| n.0.clone()))
                .collect();
            if short.is_empty() {
                return None;
            }
            Some(Refusal {
                code: "53000",
                tag: "does not fit",
                why: format!(
                    "jobs {short:?} have more actors than the {} units left",
                    s.running_units_except(Some(id)).len()
                ),
                mention: short,
            })
        }
    }
}
