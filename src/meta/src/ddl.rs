//! DDL on meta: creating a relation's streaming job (plan → place actors →
//! build them idle → one `Add` barrier → backfill in slices) and dropping
//! relations.

use ebbflow_common::ErrorKind;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::catalog::{RelationDesc, TableId};
use super::control::JobChange;
use super::fragment::{actor_desc, dispatcher_desc, even_bitmaps, ActorInfo, Edge, Fragment};
use super::graph::{PlanGraph, Upstream};
use super::service::{Meta, Parallelism, RelationEntry};
use super::{MetaError, MetaResult};
use ebbflow_common::{ActorId, FragmentId};
use ebbflow_common::{Bitmap, ScalarValue};
use ebbflow_plan::Mutation;
use ebbflow_plan::NodeDesc;
use ebbflow_stream::compute_node::WorkerId;

impl Meta {
    /// Create a relation's streaming job from its plan and wait until it is
    /// running and (for MVs) backfilled.
    pub async fn create_job(
        &self,
        mut desc: RelationDesc,
        graph: PlanGraph,
        parallelism: Parallelism,
    ) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        let table_id = desc.id;
        // 1. place
        let (new_frags, change) = {
            let mut st = self.state.lock();
            Self::check_name_free(&st, &desc.name)?;
            let total = st.total_units().max(1);
            let n = match parallelism {
                Parallelism::Adaptive | Parallelism::Custom => total,
                Parallelism::Fixed(n) => (n as usize).min(total).max(1),
            };
            let mut frag_ids = Vec::new();
            let mut new_frags = Vec::new();
            for pf in &graph.fragments {
                st.next_fragment_id += 1;
                let fid = st.next_fragment_id;
                frag_ids.push(fid);
                let count = if pf.singleton { 1 } else { n };
                let units = st.placement().pick(&[], count);
                let bitmaps = if pf.singleton {
                    vec![Bitmap::full()]
                } else {
                    even_bitmaps(count)
                };
                let mut actors = Vec::new();
                for (i, vnodes) in bitmaps.into_iter().enumerate() {
                    st.next_actor_id += 1;
                    let Some(&(worker, unit)) = units.get(i % units.len().max(1)) else {
                        return Err(MetaError::new(
                            ErrorKind::ObjectNotInPrerequisiteState,
                            "no compute node is running to place the job on",
                        ));
                    };
                    actors.push(ActorInfo {
                        actor_id: st.next_actor_id,
                        worker,
                        unit,
                        vnodes,
                    });
                }
                let frag = Fragment {
                    id: fid,
                    table_id,
                    nodes: pf.nodes.clone(),
                    singleton: pf.singleton,
                    source: pf.source.clone(),
                    actors,
                };
                // Register now so later fragments of this job count its load.
                st.fragments.insert(fid, frag.clone());
                new_frags.push(frag);
            }
            let mut new_edges = Vec::new();
            let mut upstreams = Vec::new();
            for (i, pf) in graph.fragments.iter().enumerate() {
                for (idx, (up, spec)) in pf.inputs.iter().enumerate() {
                    let up_frag = match up {
                        Upstream::Local(j) => frag_ids[*j],
                        Upstream::Existing(t) => {
                            upstreams.push(*t);
                            match st.relations.get(t) {
                                Some(r) => r.materialize_fragment,
                                None => {
                                    for f in &frag_ids {
                                        st.fragments.remove(f);
                                    }
                                    return Err(MetaError::new(
                                        ErrorKind::UndefinedTable,
                                        format!("relation with id {t} does not exist"),
                                    ));
                                }
                            }
                        }
                    };
                    new_edges.push(Edge {
                        up: up_frag,
                        down: frag_ids[i],
                        input_index: idx,
                        spec: spec.clone(),
                    });
                }
            }
            st.edges.extend(new_edges.iter().cloned());
            // dispatchers of existing upstream actors towards the new job
            let mut mutation_dispatchers: HashMap<ActorId, Vec<_>> = HashMap::new();
            for e in &new_edges {
                if frag_ids.contains(&e.up) {
                    continue;
                }
                if let (Some(up), Some(down)) = (st.fragments.get(&e.up), st.fragments.get(&e.down))
                {
                    let d = dispatcher_desc(e, down);
                    for a in &up.actors {
                        mutation_dispatchers
                            .entry(a.actor_id)
                            .or_default()
                            .push(d.clone());
                    }
                }
            }
            let mut add_actors = Vec::new();
            let mut add_sources = Vec::new();
            let mut descs: Vec<(WorkerId, ebbflow_plan::ActorDesc)> = Vec::new();
            for f in &new_frags {
                for a in &f.actors {
                    add_actors.push(a.actor_id);
                    if !matches!(f.source, ebbflow_plan::SourceDesc::None) {
                        add_sources.push((a.worker, a.actor_id));
                    }
                    descs.push((a.worker, actor_desc(f, a, &st.fragments, &st.edges)));
                }
            }
            if let Some(gone) = graph
                .views
                .iter()
                .chain(&graph.sources)
                .find(|v| !st.relations.contains_key(v))
            {
                for f in &frag_ids {
                    st.fragments.remove(f);
                }
                return Err(MetaError::new(
                    ErrorKind::UndefinedTable,
                    format!("relation with id {gone} does not exist"),
                ));
            }
            upstreams.extend(graph.views.iter().chain(&graph.sources).copied());
            upstreams.sort_unstable();
            upstreams.dedup();
            desc.columns = graph.columns.clone();
            let materialize_fragment = *frag_ids.last().unwrap_or(&0);
            st.relations.insert(
                table_id,
                RelationEntry {
                    desc: Arc::new(desc.clone()),
                    dist_key: graph.dist_key.clone(),
                    singleton: graph.singleton,
                    fragments: frag_ids.clone(),
                    materialize_fragment,
                    upstreams,
                    internal_tables: graph.internal_tables.clone(),
                    parallelism,
                },
            );
            let added_actors: HashSet<ActorId> = add_actors.iter().copied().collect();
            let change = JobChange {
                descs,
                mutation: Mutation::Add {
                    dispatchers: mutation_dispatchers,
                    added_actors,
                },
                add_actors,
                add_sources,
                remove_actors: Vec::new(),
            };
            (new_frags, change)
        };
        // 2.–3. build the actors idle and wire them in with one barrier
        let wired = self.apply_change(change, None).await.result;
        if let Err(e) = wired {
            // Forget the job: the recovery that follows the failed barrier
            // rebuilds the cluster without it.
            let mut st = self.state.lock();
            st.relations.remove(&table_id);
            for f in &new_frags {
                st.fragments.remove(&f.id);
            }
            let ids: Vec<FragmentId> = new_frags.iter().map(|f| f.id).collect();
            st.edges
                .retain(|e| !ids.contains(&e.up) && !ids.contains(&e.down));
            return Err(e);
        }
        // Backfill, one slice per barrier, until every vnode is done. Not
        // under the DDL lock: the job can be rescaled meanwhile, and a
        // recovery (which takes it) may have to run before a flush can
        // finish; the backfill continues from its committed progress.
        drop(_ddl);
        loop {
            self.flush().await?;
            match self.backfill_done(table_id).await? {
                Some(true) => return Ok(()),
                Some(false) => {}
                None => {
                    return Err(MetaError::new(
                        ErrorKind::QueryCanceled,
                        "the materialized view was dropped while it was being created",
                    ))
                }
            }
        }
    }

    /// Whether every stream scan of a job has backfilled every vnode, as
    /// committed (`None` if the job is gone).
    pub async fn backfill_done(&self, table_id: TableId) -> MetaResult<Option<bool>> {
        let progress_tables: Vec<TableId> = {
            let st = self.state.lock();
            let Some(r) = st.relations.get(&table_id) else {
                return Ok(None);
            };
            r.fragments
                .iter()
                .filter_map(|f| st.fragments.get(f))
                .flat_map(|f| f.nodes.iter())
                .filter_map(|n| match n {
                    NodeDesc::StreamScan {
                        backfill: Some(b), ..
                    } => Some(b.progress.table_id),
                    _ => None,
                })
                .collect()
        };
        let snapshot = self.store.snapshot();
        for t in progress_tables {
            let prefix = ebbflow_storage::table_prefix(t);
            let rows = snapshot
                .scan(ebbflow_storage::prefix_range(&prefix))
                .await?;
            let mut done = 0;
            for (_, v) in rows {
                let row = ebbflow_common::encoding::decode_row_tagged(&v)
                    .map_err(|e| MetaError::internal(e.to_string()))?;
                if matches!(row.first(), Some(Some(ScalarValue::Boolean(true)))) {
                    done += 1;
                }
            }
            if done < ebbflow_common::VNODE_COUNT {
                return Ok(Some(false));
            }
        }
        Ok(Some(true))
    }

    /// Drop a relation (and, with `cascade`, everything reading it).
    pub async fn drop_relation(&self, table_id: TableId, cascade: bool) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        // collect the relations to drop, dependents first
        let order = {
            let st = self.state.lock();
            let mut order = Vec::new();
            let mut stack = vec![table_id];
            while let Some(t) = stack.pop() {
                if order.contains(&t) {
                    continue;
                }
                let deps: Vec<&RelationEntry> = st
                    .relations
                    .values()
                    .filter(|r| r.upstreams.contains(&t))
                    .collect();
                if !deps.is_empty() && !cascade {
                    let me = st
                        .relations
                        .get(&t)
                        .map(|r| r.desc.clone())
                        .ok_or_else(|| MetaError::internal("relation vanished"))?;
                    let mut e = MetaError::new(
                        ErrorKind::DependentObjectsStillExist,
                        format!(
                            "cannot drop {} {} because other objects depend on it",
                            me.kind.name(),
                            me.name
                        ),
                    );
                    e.set_hint(format!(
                        "{} {} depends on it; use DROP ... CASCADE to drop the dependent objects too",
                        deps[0].desc.kind.name(),
                        deps[0].desc.name
                    ));
                    return Err(e);
                }
                order.push(t);
                stack.extend(deps.iter().map(|d| d.desc.id));
            }
            order.reverse();
            order
        };
        for t in order {
            self.drop_one(t).await?;
        }
        Ok(())
    }

    async fn drop_one(&self, table_id: TableId) -> MetaResult<()> {
        let (actors, by_worker) = {
            let st = self.state.lock();
            let Some(r) = st.relations.get(&table_id) else {
                return Ok(());
            };
            let mut actors = Vec::new();
            let mut by_worker: HashMap<WorkerId, Vec<ActorId>> = HashMap::new();
            for f in &r.fragments {
                if let Some(f) = st.fragments.get(f) {
                    for a in &f.actors {
                        actors.push(a.actor_id);
                        by_worker.entry(a.worker).or_default().push(a.actor_id);
                    }
                }
            }
            (actors, by_worker)
        };
        self.routes.write().await.remove(&table_id);
        let mutation = Mutation::Stop {
            actors: actors.iter().copied().collect(),
        };
        self.barrier(Some(mutation), vec![], vec![], actors).await?;
        let tables = {
            let mut st = self.state.lock();
            let Some(r) = st.relations.remove(&table_id) else {
                return Ok(());
            };
            for f in &r.fragments {
                st.fragments.remove(f);
            }
            st.edges
                .retain(|e| !r.fragments.contains(&e.up) && !r.fragments.contains(&e.down));
            for (w, ids) in &by_worker {
                if let Some(n) = st.node(*w) {
                    n.forget_actors(ids);
                }
            }
            let mut tables = r.internal_tables.clone();
            tables.push(table_id);
            tables
        };
        // The state goes with the barrier that commits the catalog without
        // the relation.
        for t in tables {
            self.committer.drop_table(t);
        }
        self.persist_catalog().await?;
        Ok(())
    }
}
