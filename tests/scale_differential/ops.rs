//! The scale operations of the test: the layout as `rw_fragments` and
//! `rw_actors` show it, reschedule plan items, and [`Scaler`], the random
//! generator of valid operations (with the layout each must leave), dry
//! runs and invalid requests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use tokio_postgres::Client;

use super::common::rows::cell;
use super::{eb_run, UNITS};

/// Fragment id → (is singleton, owning job id).
pub(super) type Fragments = BTreeMap<u32, (bool, u32)>;
/// Fragment id → sorted (parallel unit, actor id).
pub(super) type Layout = BTreeMap<u32, Vec<(u32, u32)>>;

pub(super) fn int(v: &Option<String>) -> u32 {
    cell(v).unwrap_or(u32::MAX)
}

pub(super) async fn fragments(c: &Client) -> Result<Fragments, String> {
    let rows = eb_run(
        c,
        "SELECT fragment_id, table_id, distribution_type FROM rw_fragments",
    )
    .await?;
    Ok(rows
        .iter()
        .map(|r| (int(&r[0]), (r[2].as_deref() == Some("single"), int(&r[1]))))
        .collect())
}

pub(super) async fn layout(c: &Client) -> Result<Layout, String> {
    let rows = eb_run(
        c,
        "SELECT fragment_id, parallel_unit_id, actor_id FROM rw_actors",
    )
    .await?;
    let mut out: Layout = BTreeMap::new();
    for r in &rows {
        out.entry(int(&r[0]))
            .or_default()
            .push((int(&r[1]), int(&r[2])));
    }
    for v in out.values_mut() {
        v.sort();
    }
    Ok(out)
}

pub(super) fn units(l: &Layout, f: u32) -> BTreeSet<u32> {
    l.get(&f)
        .map(|v| v.iter().map(|x| x.0).collect())
        .unwrap_or_default()
}

pub(super) fn list(s: &BTreeSet<u32>) -> String {
    s.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// What a valid operation must leave: fragment → exact set of units.
pub(super) type Expect = BTreeMap<u32, BTreeSet<u32>>;

/// A reschedule plan item and its expected result.
pub(super) fn plan_item(
    f: u32,
    cur: &BTreeSet<u32>,
    remove: &BTreeSet<u32>,
    add: &BTreeSet<u32>,
) -> (String, BTreeSet<u32>) {
    let mut s = f.to_string();
    if !remove.is_empty() {
        let _ = write!(s, "-[{}]", list(remove));
    }
    if !add.is_empty() {
        let _ = write!(s, "+[{}]", list(add));
    }
    let new: BTreeSet<u32> = cur.difference(remove).chain(add.iter()).copied().collect();
    (s, new)
}

/// The plan item moving fragment `f` (currently on `cur`) onto unit `u` alone.
pub(super) fn squeeze_item(f: u32, cur: &BTreeSet<u32>, u: u32) -> Option<String> {
    let remove: BTreeSet<u32> = cur.iter().copied().filter(|&x| x != u).collect();
    let add: BTreeSet<u32> = if cur.contains(&u) {
        BTreeSet::new()
    } else {
        [u].into()
    };
    if remove.is_empty() && add.is_empty() {
        return None;
    }
    Some(plan_item(f, cur, &remove, &add).0)
}

pub(super) enum Op {
    /// Must succeed and leave the expected layout (`None`: only for job-level
    /// fixed parallelism, checked by count: job id, n).
    Valid {
        sql: String,
        expect: Expect,
        job_count: Option<(u32, usize)>,
    },
    /// DRY RUN: must succeed, return rows, change nothing.
    Dry(String),
    /// Must fail and change nothing.
    Invalid(String),
}

pub(super) struct Scaler {
    pub(super) rng: StdRng,
    /// Job id → (name, whether it is a table).
    pub(super) jobs: BTreeMap<u32, (String, bool)>,
}

impl Scaler {
    fn par(&mut self) -> (String, usize) {
        if self.rng.gen_bool(0.25) {
            ("ADAPTIVE".into(), UNITS as usize)
        } else {
            let n = self.rng.gen_range(1..=UNITS as usize);
            (n.to_string(), n)
        }
    }

    fn random_reschedule(
        &mut self,
        f: u32,
        single: bool,
        cur: &BTreeSet<u32>,
    ) -> (String, BTreeSet<u32>) {
        let free: Vec<u32> = (0..UNITS).filter(|u| !cur.contains(u)).collect();
        let used: Vec<u32> = cur.iter().copied().collect();
        if single || (self.rng.gen_bool(0.3) && !free.is_empty()) {
            // Migration of one actor.
            let r = *used.choose(&mut self.rng).expect("an actor");
            let a = *free.choose(&mut self.rng).expect("a free unit");
            return plan_item(f, cur, &[r].into(), &[a].into());
        }
        loop {
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
            let left = cur.len() - remove.len() + add.len();
            if left >= 1 && !(remove.is_empty() && add.is_empty()) {
                return plan_item(f, cur, &remove, &add);
            }
        }
    }

    pub(super) fn next(&mut self, frags: &Fragments, l: &Layout) -> Op {
        let hash: Vec<u32> = frags
            .iter()
            .filter(|(_, v)| !v.0)
            .map(|(k, _)| *k)
            .collect();
        let singles: Vec<u32> = frags.iter().filter(|(_, v)| v.0).map(|(k, _)| *k).collect();
        match self.rng.gen_range(0..100) {
            0..=14 => {
                let jobs: Vec<u32> = self.jobs.keys().copied().collect();
                let job = *jobs.choose(&mut self.rng).expect("jobs");
                let (name, is_table) = self.jobs[&job].clone();
                let (p, n) = self.par();
                let kind = if is_table {
                    "TABLE"
                } else {
                    "MATERIALIZED VIEW"
                };
                Op::Valid {
                    sql: format!("ALTER {kind} {name} SET PARALLELISM = {p}"),
                    expect: Expect::new(),
                    job_count: Some((job, n)),
                }
            }
            15..=34 => {
                let f = *hash.choose(&mut self.rng).expect("hash fragments");
                let (p, n) = self.par();
                let _ = n;
                let all: BTreeSet<u32> = (0..UNITS).collect();
                let mut expect = Expect::new();
                if n == UNITS as usize {
                    expect.insert(f, all);
                }
                let sql = format!("ALTER FRAGMENT {f} SET PARALLELISM = {p}");
                // The count is checked below through a one-fragment "job".
                Op::Valid {
                    sql,
                    expect,
                    job_count: Some((u32::MAX - f, n)),
                }
            }
            roll @ 35..=79 => {
                // A hash fragment, or (from 65) a singleton.
                let single = roll >= 65;
                let (pool, what) = if single {
                    (&singles, "singleton fragments")
                } else {
                    (&hash, "hash fragments")
                };
                let f = *pool.choose(&mut self.rng).expect(what);
                let cur = units(l, f);
                let (item, new) = self.random_reschedule(f, single, &cur);
                Op::Valid {
                    sql: format!("ALTER SYSTEM RESCHEDULE '{item}'"),
                    expect: [(f, new)].into(),
                    job_count: None,
                }
            }
            80..=89 => {
                // Several fragments in one plan.
                let all: Vec<u32> = frags.keys().copied().collect();
                let n = self.rng.gen_range(2..=3);
                let picked: Vec<u32> = all.choose_multiple(&mut self.rng, n).copied().collect();
                let mut items = Vec::new();
                let mut expect = Expect::new();
                for f in picked {
                    let cur = units(l, f);
                    let (item, new) = self.random_reschedule(f, frags[&f].0, &cur);
                    items.push(item);
                    expect.insert(f, new);
                }
                Op::Valid {
                    sql: format!("ALTER SYSTEM RESCHEDULE '{}'", items.join("; ")),
                    expect,
                    job_count: None,
                }
            }
            90..=94 => {
                let f = *frags
                    .keys()
                    .collect::<Vec<_>>()
                    .choose(&mut self.rng)
                    .expect("fragments");
                let cur = units(l, *f);
                let (item, _) = self.random_reschedule(*f, frags[f].0, &cur);
                Op::Dry(format!("ALTER SYSTEM RESCHEDULE '{item}' DRY RUN"))
            }
            _ => {
                let h = *hash.choose(&mut self.rng).expect("hash fragments");
                let s = *singles.choose(&mut self.rng).expect("singleton fragments");
                let hu = units(l, h);
                let unused: Vec<u32> = (0..UNITS).filter(|u| !hu.contains(u)).collect();
                let sql = match self.rng.gen_range(0..7) {
                    0 => format!("ALTER FRAGMENT {h} SET PARALLELISM = {}", UNITS + 1),
                    1 => format!("ALTER FRAGMENT {s} SET PARALLELISM = 2"),
                    2 => format!(
                        "ALTER SYSTEM RESCHEDULE '{h}+[{}]'",
                        hu.iter().next().expect("a unit")
                    ),
                    3 if !unused.is_empty() => {
                        format!("ALTER SYSTEM RESCHEDULE '{h}-[{}]'", unused[0])
                    }
                    3 | 4 => format!("ALTER SYSTEM RESCHEDULE '{h}+[{}]'", UNITS + 3),
                    5 => "ALTER FRAGMENT 9999 SET PARALLELISM = 2".into(),
                    _ => format!("ALTER SYSTEM RESCHEDULE '{h}-[{}]'", list(&hu)),
                };
                Op::Invalid(sql)
            }
        }
    }
}
