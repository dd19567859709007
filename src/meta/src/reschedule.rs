//! Online scaling: applying a reschedule plan with one barrier (docs/design.md §5).
//!
//! A plan says, per fragment, which parallel units lose their actor and
//! which gain one. Meta checks it, computes new vnode mappings with
//! minimal movement ([`super::scale::rebalance`]), builds the new actors
//! idle, and injects one barrier whose `Update` mutation carries the whole
//! change; DML to the tables involved waits (it is not refused) from just
//! before that barrier until it is injected. The statement returns once the
//! epoch carrying the change and the new layout is committed. A failure on
//! the way restores the old layout, and the recovery that follows rebuilds
//! it from the last committed epoch.

use ebbflow_common::ErrorKind;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use super::cluster::WorkerState;
use super::control::{DmlHold, JobChange};
use super::fragment::{actor_desc, ActorInfo, Fragment};
use super::graph::EdgeSpec;
use super::scale::{rebalance, Owner};
use super::service::{Meta, MetaState, Parallelism, ScaleRecord};
use super::{MetaError, MetaResult};
use crate::catalog::{RelationDesc, RelationKind, TableId};
use crate::cluster::UnitId;
use ebbflow_common::Bitmap;
use ebbflow_common::{ActorId, FragmentId};
use ebbflow_plan::SourceDesc;
use ebbflow_plan::{DispatcherUpdate, Mutation, UpdateMutation};
use ebbflow_stream::compute_node::WorkerId;

mod plan;

use plan::units_text;
pub use plan::{parse_plan, splits_no_shuffle_group, FragmentChange};

/// What a reschedule does to one fragment.
#[derive(Clone, Debug, Default)]
pub struct FragmentSummary {
    pub fragment: FragmentId,
    pub actors_added: usize,
    pub actors_removed: usize,
    pub vnodes_moved: usize,
    /// Vnodes whose new owner runs on another compute node.
    pub vnodes_moved_across_workers: usize,
    /// The change, as `-[units]+[units]`.
    pub units: String,
}

/// What a reschedule does, per fragment (also the DRY RUN output).
#[derive(Clone, Debug, Default)]
pub struct ScaleSummary {
    pub fragments: Vec<FragmentSummary>,
    pub pause_ms: f64,
    pub total_ms: f64,
}

/// Who asked for a reschedule, which decides what becomes of the jobs'
/// parallelism setting.
#[derive(Clone, Copy, Debug)]
pub enum ScaleKind {
    /// `ALTER TABLE | MATERIALIZED VIEW … SET PARALLELISM`: the job's new
    /// setting.
    Job(TableId, Parallelism),
    /// `ALTER FRAGMENT`, `ALTER SYSTEM RESCHEDULE`: a job whose fragment
    /// changes its actor count gets a custom parallelism.
    Manual,
    /// The adaptive policy, a drain, a fail-over: settings stay.
    Automatic,
}

/// A fragment's actors after a change.
pub(super) struct FragmentLayout {
    pub actors: Vec<ActorInfo>,
    pub added: Vec<ActorId>,
    pub removed: Vec<ActorId>,
    /// Surviving actors whose vnodes change.
    pub changed: Vec<(ActorId, Bitmap)>,
    pub summary: FragmentSummary,
}

/// The layout of `f` after removing the actors on `ch.remove` and adding
/// `new_actors` (`(id, worker, unit)`, one per `ch.add`).
pub(super) fn fragment_layout(
    f: &Fragment,
    ch: &FragmentChange,
    new_actors: &[(ActorId, WorkerId, UnitId)],
) -> FragmentLayout {
    let removed: Vec<ActorId> = f
        .actors
        .iter()
        .filter(|a| ch.remove.contains(&a.unit))
        .map(|a| a.actor_id)
        .collect();
    let added: Vec<(ActorId, WorkerId)> = new_actors.iter().map(|(a, w, _)| (*a, *w)).collect();
    let (new_maps, moved) = if f.singleton {
        let moved = if removed.is_empty() {
            0
        } else {
            ebbflow_common::VNODE_COUNT
        };
        let keep: Vec<(ActorId, Bitmap)> = f
            .actors
            .iter()
            .filter(|a| !removed.contains(&a.actor_id))
            .map(|a| (a.actor_id, a.vnodes.clone()))
            .chain(added.iter().map(|(a, _)| (*a, Bitmap::full())))
            .collect();
        (keep, moved)
    } else {
        rebalance(&owners(f), &removed, &added)
    };
    let map: HashMap<ActorId, Bitmap> = new_maps.into_iter().collect();
    let mut actors: Vec<ActorInfo> = Vec::new();
    let mut changed = Vec::new();
    for a in &f.actors {
        if removed.contains(&a.actor_id) {
            continue;
        }
        let nb = map
            .get(&a.actor_id)
            .cloned()
            .unwrap_or_else(|| a.vnodes.clone());
        if nb != a.vnodes {
            changed.push((a.actor_id, nb.clone()));
        }
        actors.push(ActorInfo {
            vnodes: nb,
            ..a.clone()
        });
    }
    for (id, w, u) in new_actors {
        actors.push(ActorInfo {
            actor_id: *id,
            worker: *w,
            unit: *u,
            vnodes: map.get(id).cloned().unwrap_or_default(),
        });
    }
    let across = vnodes_across_workers(&f.actors, &actors);
    FragmentLayout {
        summary: FragmentSummary {
            fragment: f.id,
            actors_added: new_actors.len(),
            actors_removed: removed.len(),
            vnodes_moved: moved,
            vnodes_moved_across_workers: across,
            units: units_text(ch),
        },
        actors,
        added: new_actors.iter().map(|x| x.0).collect(),
        removed,
        changed,
    }
}

/// Vnodes whose owner's compute node differs between two layouts.
fn vnodes_across_workers(old: &[ActorInfo], new: &[ActorInfo]) -> usize {
    let worker_of = |actors: &[ActorInfo]| {
        let mut m = vec![None; ebbflow_common::VNODE_COUNT];
        for a in actors {
            for v in a.vnodes.iter() {
                m[v as usize] = Some(a.worker);
            }
        }
        m
    };
    let (o, n) = (worker_of(old), worker_of(new));
    o.iter().zip(&n).filter(|(a, b)| a != b).count()
}

impl MetaState {
    /// Change the layout of the fragments in `plan`, allocating the new
    /// actors; returns each fragment's layout change.
    pub(super) fn apply_layouts(
        &mut self,
        plan: &BTreeMap<FragmentId, FragmentChange>,
    ) -> Vec<FragmentLayout> {
        let mut out = Vec::new();
        for (fid, ch) in plan {
            let Some(f) = self.fragments.get(fid).cloned() else {
                continue;
            };
            let new_actors: Vec<(ActorId, WorkerId, UnitId)> = ch
                .add
                .iter()
                .map(|u| {
                    let id = self.next_actor();
                    (id, self.worker_of_unit(*u).unwrap_or(0), *u)
                })
                .collect();
            let layout = fragment_layout(&f, ch, &new_actors);
            if let Some(fm) = self.fragments.get_mut(fid) {
                fm.actors = layout.actors.clone();
            }
            out.push(layout);
        }
        out
    }

    /// Record one operation in `rw_scale_history`.
    pub(super) fn record_scale(
        &mut self,
        started_at: chrono::NaiveDateTime,
        statement: &str,
        summary: &ScaleSummary,
        ok: bool,
    ) {
        let id = self.scale_history.len() as u32 + 1;
        let sum = |f: fn(&FragmentSummary) -> usize| {
            summary.fragments.iter().map(f).sum::<usize>() as u32
        };
        self.scale_history.push(ScaleRecord {
            id,
            started_at,
            statement: statement.to_string(),
            actors_added: sum(|f| f.actors_added),
            actors_removed: sum(|f| f.actors_removed),
            vnodes_moved: sum(|f| f.vnodes_moved),
            vnodes_moved_across_workers: sum(|f| f.vnodes_moved_across_workers),
            pause_ms: summary.pause_ms,
            total_ms: summary.total_ms,
            status: if ok { "succeeded" } else { "failed" }.into(),
        });
    }
}

/// What `ALTER … SET PARALLELISM` changes: a job (a table's or an MV's
/// fragments, whose parallelism is recorded for later rescales), a source,
/// or one fragment named by id.
#[derive(Clone, Copy, Debug)]
pub enum ScaleTarget<'a> {
    Relation(&'a RelationDesc),
    Fragment(FragmentId),
}

impl Meta {
    /// `ALTER {TABLE | MATERIALIZED VIEW | SOURCE | FRAGMENT} … SET
    /// PARALLELISM = p`. Scale policy is meta's: a table's or an MV's job
    /// records `p` (a scale of kind [`ScaleKind::Job`], followed by later
    /// adaptive rescales; recorded even when nothing had to move), while a
    /// source or a fragment named by id is an explicit, manual change. The
    /// plan is made and applied under the DDL lock (a plan made before
    /// taking it could be stale). `None` when nothing had to move.
    pub async fn alter_parallelism(
        &self,
        target: ScaleTarget<'_>,
        parallelism: Parallelism,
    ) -> MetaResult<Option<ScaleSummary>> {
        let (fragments, job) = match target {
            ScaleTarget::Relation(r) if r.kind == RelationKind::Source => {
                (self.source_fragments(r.id), None)
            }
            ScaleTarget::Relation(r) => {
                let frags = self
                    .state
                    .lock()
                    .relations
                    .get(&r.id)
                    .map(|e| e.fragments.clone())
                    .ok_or_else(|| {
                        MetaError::new(
                            ErrorKind::UndefinedTable,
                            format!("relation \"{}\" does not exist", r.name),
                        )
                    })?;
                (frags, Some(r.id))
            }
            ScaleTarget::Fragment(f) => (vec![f], None),
        };
        let shown = parallelism.display().to_uppercase();
        // The statement as the scale history records it.
        let statement = match target {
            ScaleTarget::Relation(r) => format!(
                "ALTER {} {} SET PARALLELISM = {shown}",
                r.kind.name().to_uppercase(),
                r.name
            ),
            ScaleTarget::Fragment(f) => format!("ALTER FRAGMENT {f} SET PARALLELISM = {shown}"),
        };
        let kind = match job {
            Some(t) => ScaleKind::Job(t, parallelism),
            None => ScaleKind::Manual,
        };
        let _ddl = self.ddl_lock.lock().await;
        let plan = self.plan_parallelism(&fragments, parallelism, job.is_none())?;
        if plan.is_empty() {
            if let Some(t) = job {
                self.set_parallelism(t, parallelism);
            }
            return Ok(None);
        }
        self.apply_reschedule_locked(plan, &statement, kind)
            .await
            .map(Some)
    }

    /// `ALTER SYSTEM RESCHEDULE '<plan>' [DRY RUN]`: the plan's text
    /// parsed, then previewed (a dry run) or applied as a manual scale.
    pub async fn reschedule_text(&self, plan: &str, dry_run: bool) -> MetaResult<ScaleSummary> {
        let parsed = parse_plan(plan)?;
        if dry_run {
            return self.preview_reschedule(&parsed);
        }
        let statement = format!("ALTER SYSTEM RESCHEDULE '{plan}'");
        self.apply_reschedule(parsed, &statement, ScaleKind::Manual)
            .await
    }

    /// The plan that gives every hash fragment of a job `parallelism`
    /// actors (singleton fragments keep their one actor).
    pub fn plan_parallelism(
        &self,
        fragments: &[FragmentId],
        parallelism: Parallelism,
        explicit_fragment: bool,
    ) -> MetaResult<BTreeMap<FragmentId, FragmentChange>> {
        let st = self.state.lock();
        let total = st.total_units();
        let n = match parallelism {
            Parallelism::Adaptive => total,
            Parallelism::Custom => return Ok(BTreeMap::new()),
            Parallelism::Fixed(n) => {
                if n as usize > total {
                    return Err(MetaError::new(
                        ErrorKind::InvalidParameterValue,
                        format!(
                            "parallelism {n} is above the {total} parallel units of the cluster"
                        ),
                    ));
                }
                n as usize
            }
        };
        let mut placement = st.placement();
        let mut plan = BTreeMap::new();
        for fid in fragments {
            let f = st.fragments.get(fid).ok_or_else(|| {
                MetaError::new(
                    ErrorKind::UndefinedObject,
                    format!("fragment {fid} does not exist"),
                )
            })?;
            if f.singleton {
                if explicit_fragment && n != 1 {
                    return Err(MetaError::new(
                        ErrorKind::FeatureNotSupported,
                        format!("fragment {fid} is a singleton and always has parallelism 1; use ALTER SYSTEM RESCHEDULE to move it"),
                    ));
                }
                continue;
            }
            let cur: Vec<(WorkerId, UnitId)> =
                f.actors.iter().map(|a| (a.worker, a.unit)).collect();
            let mut change = FragmentChange::default();
            if n > cur.len() {
                change.add = placement
                    .pick(&cur, n - cur.len())
                    .into_iter()
                    .map(|(_, u)| u)
                    .collect();
            } else if n < cur.len() {
                change.remove = placement.pick_removals(&cur, cur.len() - n);
            }
            if !change.add.is_empty() || !change.remove.is_empty() {
                plan.insert(*fid, change);
            }
        }
        Ok(plan)
    }

    /// Check a plan against the cluster (docs/design.md §5 step 1).
    pub(super) fn check_plan(&self, plan: &BTreeMap<FragmentId, FragmentChange>) -> MetaResult<()> {
        let st = self.state.lock();
        for (fid, ch) in plan {
            let f = st.fragments.get(fid).ok_or_else(|| {
                MetaError::new(
                    ErrorKind::UndefinedObject,
                    format!("fragment {fid} does not exist"),
                )
            })?;
            let cur: Vec<UnitId> = f.actors.iter().map(|a| a.unit).collect();
            for u in &ch.remove {
                if !cur.contains(u) {
                    return Err(MetaError::new(
                        ErrorKind::InvalidParameterValue,
                        format!("fragment {fid} has no actor on parallel unit {u}"),
                    ));
                }
            }
            let mut seen = HashSet::new();
            for u in &ch.add {
                let Some(w) = st.worker_of_unit(*u).and_then(|w| st.workers.get(&w)) else {
                    return Err(MetaError::new(
                        ErrorKind::UndefinedObject,
                        format!("parallel unit {u} does not exist"),
                    ));
                };
                if w.state != WorkerState::Running {
                    return Err(MetaError::new(
                        ErrorKind::ObjectNotInPrerequisiteState,
                        format!(
                            "parallel unit {u} is on compute node {}, which is {}: no new actors go there",
                            w.id,
                            w.state.name()
                        ),
                    ));
                }
                if (cur.contains(u) && !ch.remove.contains(u)) || !seen.insert(*u) {
                    return Err(MetaError::new(
                        ErrorKind::InvalidParameterValue,
                        format!("fragment {fid} already has an actor on parallel unit {u}"),
                    ));
                }
            }
            let after = cur.len() - ch.remove.len() + ch.add.len();
            if after == 0 {
                return Err(MetaError::new(
                    ErrorKind::InvalidParameterValue,
                    format!("fragment {fid} would have no actor left"),
                ));
            }
            if f.singleton && after != 1 {
                return Err(MetaError::new(
                    ErrorKind::FeatureNotSupported,
                    format!("fragment {fid} is a singleton: it can be moved but must keep exactly one actor"),
                ));
            }
        }
        if let Some(msg) = splits_no_shuffle_group(&st.edges, plan) {
            return Err(MetaError::new(ErrorKind::InvalidParameterValue, msg));
        }
        Ok(())
    }

    /// Dry run: what `apply_reschedule` would do.
    pub fn preview_reschedule(
        &self,
        plan: &BTreeMap<FragmentId, FragmentChange>,
    ) -> MetaResult<ScaleSummary> {
        self.check_plan(plan)?;
        let st = self.state.lock();
        let mut summary = ScaleSummary::default();
        for (fid, ch) in plan {
            let Some(f) = st.fragments.get(fid) else {
                continue;
            };
            let new_actors: Vec<(ActorId, WorkerId, UnitId)> = ch
                .add
                .iter()
                .enumerate()
                .map(|(i, u)| (u32::MAX - i as u32, st.worker_of_unit(*u).unwrap_or(0), *u))
                .collect();
            summary
                .fragments
                .push(fragment_layout(f, ch, &new_actors).summary);
        }
        Ok(summary)
    }

    /// Apply a plan online with one barrier; record it in the history.
    pub async fn apply_reschedule(
        &self,
        plan: BTreeMap<FragmentId, FragmentChange>,
        statement: &str,
        kind: ScaleKind,
    ) -> MetaResult<ScaleSummary> {
        let _ddl = self.ddl_lock.lock().await;
        self.apply_reschedule_locked(plan, statement, kind).await
    }

    /// [`Self::apply_reschedule`], the caller holding the DDL lock.
    pub(super) async fn apply_reschedule_locked(
        &self,
        plan: BTreeMap<FragmentId, FragmentChange>,
        statement: &str,
        kind: ScaleKind,
    ) -> MetaResult<ScaleSummary> {
        let started = Instant::now();
        let started_at = chrono::Utc::now().naive_utc();
        // DML waits from before the layout changes until the barrier that
        // applies it is injected: no route to the new layout may be built
        // (and no row sent along it) before that barrier.
        let routes = self.routes.write().await;
        self.check_plan(&plan)?;
        let mut summary = ScaleSummary::default();
        // 1. the new layout, and the mutation that gets there
        let (old_fragments, old_parallelism, change, tables) = {
            let mut st = self.state.lock();
            let old_fragments = st.fragments.clone();
            let old_parallelism: Vec<(TableId, Parallelism)> = st
                .relations
                .iter()
                .map(|(t, r)| (*t, r.parallelism))
                .collect();
            let layouts = st.apply_layouts(&plan);
            let mut added_of: HashMap<FragmentId, Vec<ActorId>> = HashMap::new();
            let mut removed_of: HashMap<FragmentId, Vec<ActorId>> = HashMap::new();
            let mut bitmaps: HashMap<ActorId, Bitmap> = HashMap::new();
            let mut resized = Vec::new();
            for l in layouts {
                let fid = l.summary.fragment;
                if l.added.len() != l.removed.len() {
                    resized.push(fid);
                }
                bitmaps.extend(l.changed);
                added_of.insert(fid, l.added);
                removed_of.insert(fid, l.removed);
                summary.fragments.push(l.summary);
            }
            match kind {
                ScaleKind::Job(t, p) => {
                    if let Some(r) = st.relations.get_mut(&t) {
                        r.parallelism = p;
                    }
                }
                ScaleKind::Manual => {
                    for r in st.relations.values_mut() {
                        if r.fragments.iter().any(|f| resized.contains(f)) {
                            r.parallelism = Parallelism::Custom;
                        }
                    }
                }
                ScaleKind::Automatic => {}
            }
            let all_added: HashSet<ActorId> = added_of.values().flatten().copied().collect();
            let all_removed: HashSet<ActorId> = removed_of.values().flatten().copied().collect();
            let mut update = UpdateMutation {
                vnode_bitmaps: bitmaps,
                dropped_actors: all_removed.clone(),
                added_actors: all_added.clone(),
                ..Default::default()
            };
            for e in st.edges.clone() {
                // upstream actors that stay: new outputs and mapping
                if plan.contains_key(&e.down) {
                    let Some(down) = st.fragments.get(&e.down) else {
                        continue;
                    };
                    let new_mapping = match e.spec {
                        EdgeSpec::Hash(_) => Some(down.mapping()),
                        _ => None,
                    };
                    let upd = DispatcherUpdate {
                        downstream_fragment: e.down,
                        added_outputs: added_of.get(&e.down).cloned().unwrap_or_default(),
                        removed_outputs: removed_of.get(&e.down).cloned().unwrap_or_default(),
                        new_mapping,
                    };
                    if let Some(up) = st.fragments.get(&e.up) {
                        for a in &up.actors {
                            if !all_added.contains(&a.actor_id) {
                                update
                                    .dispatchers
                                    .entry(a.actor_id)
                                    .or_default()
                                    .push(upd.clone());
                            }
                        }
                    }
                }
                // downstream actors that stay: new inputs
                if plan.contains_key(&e.up) {
                    if let Some(down) = st.fragments.get(&e.down) {
                        let added: Vec<(u32, ActorId)> = added_of
                            .get(&e.up)
                            .map(|v| v.iter().map(|a| (e.input_index as u32, *a)).collect())
                            .unwrap_or_default();
                        let removed = removed_of.get(&e.up).cloned().unwrap_or_default();
                        for a in &down.actors {
                            if all_added.contains(&a.actor_id) {
                                continue;
                            }
                            let m = update.merges.entry(a.actor_id).or_default();
                            m.added_inputs.extend(added.iter().copied());
                            m.removed_inputs.extend(removed.iter().copied());
                        }
                    }
                }
            }
            let mut descs: Vec<(WorkerId, ebbflow_plan::ActorDesc)> = Vec::new();
            let mut add_sources = Vec::new();
            let mut tables = Vec::new();
            for fid in plan.keys() {
                let Some(f) = st.fragments.get(fid) else {
                    continue;
                };
                if !matches!(f.source, SourceDesc::None) {
                    tables.push(f.table_id);
                }
                for a in &f.actors {
                    if all_added.contains(&a.actor_id) {
                        if !matches!(f.source, SourceDesc::None) {
                            add_sources.push((a.worker, a.actor_id));
                        }
                        descs.push((a.worker, actor_desc(f, a, &st.fragments, &st.edges)));
                    }
                }
            }
            let change = JobChange {
                descs,
                mutation: Mutation::Update(update),
                add_actors: all_added.into_iter().collect(),
                add_sources,
                remove_actors: all_removed.into_iter().collect(),
            };
            (old_fragments, old_parallelism, change, tables)
        };
        // 2.–3. build the new actors idle, then one barrier; DML to the
        // tables involved waits until it is injected
        let applied = self
            .apply_change(change, Some(DmlHold { routes, tables }))
            .await;
        summary.pause_ms = applied.pause.as_secs_f64() * 1000.0;
        let result = applied.result;
        let ok = result.is_ok();
        if let Err(e) = &result {
            tracing::error!(error = %e, "reschedule failed; restoring the old layout");
            let mut st = self.state.lock();
            st.fragments = old_fragments;
            for (t, p) in old_parallelism {
                if let Some(r) = st.relations.get_mut(&t) {
                    r.parallelism = p;
                }
            }
        }
        summary.total_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.state
            .lock()
            .record_scale(started_at, statement, &summary, ok);
        // The new layout was committed with the barrier's epoch; the
        // history record follows with the next barrier.
        self.persist_catalog_soon();
        result?;
        Ok(summary)
    }
}

fn owners(f: &Fragment) -> Vec<Owner> {
    f.actors
        .iter()
        .map(|a| Owner {
            actor: a.actor_id,
            worker: a.worker,
            vnodes: a.vnodes.clone(),
        })
        .collect()
}
