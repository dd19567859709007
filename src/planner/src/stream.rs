//! From a logical plan to a stream fragment graph.
//!
//! The plan is cut into fragments at every exchange: before an aggregation
//! or a join (hash by the grouping / join key), before a union, before a
//! singleton operator (global aggregate, top-N), and after the scan of an
//! existing table or MV (hash by that relation's distribution key). Each
//! stream node tracks its output stream key (unique per row, used by the
//! downstream state) and its distribution (which columns decide the vnode of
//! a row, or singleton); projections keep both by appending hidden columns.

use super::PlanError;
use crate::logical::{JoinKind, LogicalPlan};
use ebbflow_common::{DataType, Datum, ScalarValue};
use ebbflow_expr::Expr;
use ebbflow_meta::catalog::{ColumnDesc, RelationDesc, RelationKind, TableId};
use ebbflow_meta::graph::{EdgeSpec, PlanFragment, PlanGraph, Upstream, UpstreamInfo};
use ebbflow_plan::source::{connector_from_options, SplitSourceDesc};
use ebbflow_plan::BackfillDesc;
use ebbflow_plan::OnConflict;
use ebbflow_plan::{NodeDesc, SourceDesc, StateTableDesc};

mod dynamic_filter;

#[derive(Clone, Debug, PartialEq)]
enum Dist {
    Hash(Vec<usize>),
    Single,
    /// Unknown (after a full outer join): needs an exchange before state.
    Any,
}

/// A stream node under construction: the fragment it ends in, and its
/// output properties.
struct Node {
    frag: PlanFragment,
    types: Vec<DataType>,
    pk: Vec<usize>,
    dist: Dist,
}

pub struct StreamPlanner<'a> {
    fragments: Vec<PlanFragment>,
    upstream: &'a dyn UpstreamInfo,
    alloc_table_id: &'a mut dyn FnMut() -> TableId,
    internal_tables: Vec<TableId>,
    /// Sources read (each becomes a source fragment of this job).
    sources: Vec<TableId>,
    emit: Emit,
    /// Under `EMIT ON WINDOW CLOSE`: the aggregation that emits so.
    window_close_agg: Option<*const LogicalPlan>,
}

/// When an MV emits its changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// At every barrier, every change (the default).
    OnUpdate,
    /// `EMIT ON WINDOW CLOSE`: each window's rows once, final, when the
    /// watermark passes the window (append-only output).
    OnWindowClose,
}

type PResult<T> = Result<T, PlanError>;

impl<'a> StreamPlanner<'a> {
    pub fn new(
        upstream: &'a dyn UpstreamInfo,
        alloc_table_id: &'a mut dyn FnMut() -> TableId,
    ) -> Self {
        StreamPlanner {
            fragments: Vec::new(),
            upstream,
            alloc_table_id,
            internal_tables: Vec::new(),
            sources: Vec::new(),
            emit: Emit::OnUpdate,
            window_close_agg: None,
        }
    }

    fn table_id(&mut self) -> TableId {
        let id = (self.alloc_table_id)();
        self.internal_tables.push(id);
        id
    }

    /// Close `node`'s fragment and start a new one reading it through `spec`.
    fn exchange(
        &mut self,
        node: Node,
        spec: EdgeSpec,
        singleton: bool,
    ) -> (PlanFragment, Vec<DataType>, Vec<usize>) {
        self.fragments.push(node.frag);
        let idx = self.fragments.len() - 1;
        (
            PlanFragment {
                nodes: vec![],
                inputs: vec![(Upstream::Local(idx), spec)],
                singleton,
                source: SourceDesc::None,
            },
            node.types,
            node.pk,
        )
    }

    /// The executor that starts `relation`'s watermark, if it has one.
    fn watermark_filter(&mut self, relation: &RelationDesc) -> Option<NodeDesc> {
        let wm = relation.watermark.as_ref()?;
        Some(NodeDesc::WatermarkFilter {
            column: wm.column,
            expr: wm.expr.clone(),
            table: StateTableDesc {
                table_id: self.table_id(),
                pk_types: vec![],
                pk_desc: vec![],
                dist_in_pk: vec![],
                value_types: Some(vec![wm.expr.return_type()]),
            },
        })
    }

    /// A fragment of the job's own that reads `relation`'s connector:
    /// parallel, each actor reading the splits of its vnodes; rows carry
    /// the hidden row id (their position in the stream) as stream key and
    /// no distribution.
    fn plan_source(&mut self, relation: &RelationDesc) -> PResult<Node> {
        let columns: Vec<(String, DataType, bool)> = relation
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), c.data_type, relation.pk == [i]))
            .collect();
        let desc = connector_from_options(&relation.with_options, &columns, relation.id, 0)
            .map_err(|e| PlanError::internal(format!("source \"{}\": {e}", relation.name)))?
            .ok_or_else(|| {
                PlanError::internal(format!("source \"{}\" has no connector", relation.name))
            })?;
        if !self.sources.contains(&relation.id) {
            self.sources.push(relation.id);
        }
        let mut desc = desc;
        // The reader keeps the watermark per split.
        desc.watermark = relation.watermark.clone();
        let state = SourceDesc::split_state(self.table_id());
        Ok(Node {
            frag: PlanFragment {
                nodes: vec![],
                inputs: vec![],
                singleton: false,
                source: SourceDesc::Splits { desc, state },
            },
            types: relation.types(),
            pk: relation.pk.clone(),
            dist: Dist::Any,
        })
    }

    /// Plan an MV over `plan`, whose output columns are named `names`;
    /// the materialized state is table `mv_id`.
    pub fn with_emit(mut self, emit: Emit) -> Self {
        self.emit = emit;
        self
    }

    pub fn plan_mv(
        mut self,
        plan: &LogicalPlan,
        names: &[String],
        mv_id: TableId,
    ) -> PResult<PlanGraph> {
        let mut plan = plan.clone();
        plan.push_rank_limits();
        if self.emit == Emit::OnWindowClose {
            let agg = plan.window_close_aggregate()?;
            self.window_close_agg = Some(agg as *const LogicalPlan);
        }
        let node = self.plan(&plan)?;
        let visible = names.len();
        // Put the stream key (and distribution) into the output as hidden
        // columns if the query does not already show them.
        let node = self.keep_keys(node, (0..visible).collect())?;
        let mut node = match node.dist {
            Dist::Any => {
                let pk = node.pk.clone();
                let (frag, types, pk2) = self.exchange(node, EdgeSpec::Hash(pk.clone()), false);
                Node {
                    frag,
                    types,
                    pk: pk2,
                    dist: Dist::Hash(pk),
                }
            }
            _ => node,
        };
        let (dist_key, singleton) = match &node.dist {
            Dist::Hash(k) => (k.clone(), false),
            _ => (vec![], true),
        };
        let pk = node.pk.clone();
        let dist_in_pk: Vec<usize> = if dist_key.iter().all(|d| pk.contains(d)) {
            dist_key
                .iter()
                .filter_map(|d| pk.iter().position(|p| p == d))
                .collect()
        } else {
            vec![]
        };
        node.frag.nodes.push(NodeDesc::Materialize {
            table: StateTableDesc {
                table_id: mv_id,
                pk_types: pk.iter().map(|&i| node.types[i]).collect(),
                pk_desc: vec![],
                dist_in_pk,
                value_types: Some(node.types.clone()),
            },
            pk: pk.clone(),
            dist_key: dist_key.clone(),
            handle_conflicts: false,
            inserts_are_new: false,
            on_conflict: OnConflict::Overwrite,
        });
        let mut columns: Vec<ColumnDesc> = names
            .iter()
            .zip(&node.types)
            .map(|(n, t)| ColumnDesc::new(n.clone(), *t))
            .collect();
        for (i, t) in node.types.iter().enumerate().skip(visible) {
            columns.push(ColumnDesc::hidden(format!("_key{i}"), *t));
        }
        node.frag.singleton = singleton;
        self.fragments.push(node.frag);
        Ok(PlanGraph {
            fragments: self.fragments,
            columns,
            pk,
            dist_key,
            singleton,
            internal_tables: self.internal_tables,
            views: Vec::new(),
            sources: self.sources,
        })
    }

    /// Project `node` onto `keep` columns plus whatever stream key and
    /// distribution columns are missing (appended at the end).
    fn keep_keys(&mut self, node: Node, keep: Vec<usize>) -> PResult<Node> {
        let mut cols = keep;
        for &k in node.pk.iter().chain(match &node.dist {
            Dist::Hash(d) => d.iter(),
            _ => [].iter(),
        }) {
            if !cols.contains(&k) {
                cols.push(k);
            }
        }
        if cols == (0..node.types.len()).collect::<Vec<_>>() {
            return Ok(node);
        }
        let exprs = cols
            .iter()
            .map(|&c| Expr::input_ref(c, node.types[c]))
            .collect();
        Ok(self.project(node, exprs))
    }

    /// Append a projection; stream key and distribution columns must be
    /// among the plain column references of `exprs`.
    fn project(&mut self, mut node: Node, exprs: Vec<Expr>) -> Node {
        let pos = |c: usize, exprs: &[Expr]| {
            exprs
                .iter()
                .position(|e| matches!(e, Expr::InputRef { index, .. } if *index == c))
        };
        let pk = node.pk.iter().filter_map(|&k| pos(k, &exprs)).collect();
        let dist = match &node.dist {
            Dist::Hash(d) => {
                let mapped: Vec<usize> = d.iter().filter_map(|&k| pos(k, &exprs)).collect();
                if mapped.len() == d.len() {
                    Dist::Hash(mapped)
                } else {
                    Dist::Any
                }
            }
            other => other.clone(),
        };
        let types = exprs.iter().map(|e| e.return_type()).collect();
        node.frag.nodes.push(NodeDesc::Project { exprs });
        Node {
            frag: node.frag,
            types,
            pk,
            dist,
        }
    }

    fn plan(&mut self, plan: &LogicalPlan) -> PResult<Node> {
        match plan {
            LogicalPlan::Scan { relation } if relation.kind == RelationKind::Source => {
                self.plan_source(relation)
            }
            LogicalPlan::Scan { relation } => {
                let dist_key = self.upstream.dist_key(relation.id);
                let upstream_dist = dist_key.clone().unwrap_or_default();
                let (spec, singleton, dist) = match dist_key {
                    Some(k) => (EdgeSpec::Hash(k.clone()), false, Dist::Hash(k)),
                    None => (EdgeSpec::Simple, true, Dist::Single),
                };
                let upstream_state = self.upstream.state_table(relation.id).ok_or_else(|| {
                    PlanError::internal(format!("no materialized state for {}", relation.name))
                })?;
                let backfill = BackfillDesc {
                    upstream_pk: relation.pk.clone(),
                    upstream_dist,
                    upstream_state,
                    progress: StateTableDesc {
                        table_id: self.table_id(),
                        pk_types: vec![],
                        pk_desc: vec![],
                        dist_in_pk: vec![],
                        value_types: None,
                    },
                };
                let mut nodes = vec![NodeDesc::StreamScan {
                    upstream_table: relation.id,
                    upstream_types: relation.types(),
                    backfill: Some(backfill),
                }];
                nodes.extend(self.watermark_filter(relation));
                Ok(Node {
                    frag: PlanFragment {
                        nodes,
                        inputs: vec![(Upstream::Existing(relation.id), spec)],
                        singleton,
                        source: SourceDesc::None,
                    },
                    types: relation.types(),
                    pk: relation.pk.clone(),
                    dist,
                })
            }
            LogicalPlan::Values { .. } => Err(PlanError::unsupported(
                "a materialized view without FROM (constant rows)",
            )),
            LogicalPlan::OverWindow {
                input,
                partition_by,
                order_by,
                calls,
                limit,
                ..
            } => {
                let node = self.plan(input)?;
                let log = input.fields().len();
                let singleton = partition_by.is_empty();
                let spec = if singleton {
                    EdgeSpec::Simple
                } else {
                    EdgeSpec::Hash(partition_by.clone())
                };
                let (mut frag, mut types, pk) = self.exchange(node, spec, singleton);
                let phys = types.len();
                let table_id = self.table_id();
                frag.nodes.push(NodeDesc::OverWindow {
                    partition_by: partition_by.clone(),
                    order_by: order_by.clone(),
                    calls: calls.clone(),
                    limit: *limit,
                    pk: pk.clone(),
                    table: StateTableDesc {
                        table_id,
                        pk_types: partition_by
                            .iter()
                            .chain(pk.iter())
                            .map(|&i| types[i])
                            .collect(),
                        pk_desc: vec![],
                        dist_in_pk: (0..partition_by.len()).collect(),
                        value_types: Some(types.clone()),
                    },
                });
                types.extend(calls.iter().map(|c| c.return_type));
                // The partition key belongs to the stream key: a row whose
                // partition changes is retracted by one actor and added by
                // another, and only distinct keys keep those two changes
                // from racing downstream.
                let mut pk = pk;
                for &k in partition_by {
                    if !pk.contains(&k) {
                        pk.push(k);
                    }
                }
                let node = Node {
                    frag,
                    types,
                    pk,
                    dist: if singleton {
                        Dist::Single
                    } else {
                        Dist::Hash(partition_by.clone())
                    },
                };
                if log == phys {
                    return Ok(node);
                }
                // Back to the logical layout, hidden keys after it.
                let keep = (0..log).chain(phys..phys + calls.len()).collect();
                self.keep_keys(node, keep)
            }
            LogicalPlan::ExpandVector { .. } => Err(PlanError::unsupported(
                "set-returning functions other than unnest in a materialized view",
            )),
            LogicalPlan::Unnest { input, array } => {
                let mut node = self.plan(input)?;
                let (log, phys) = (input.fields().len(), node.types.len());
                let elem = array.return_type().elem().unwrap_or(DataType::Varchar);
                node.frag.nodes.push(NodeDesc::Unnest {
                    array: array.clone(),
                });
                node.types.extend([elem, DataType::Int32]);
                // A row gives one row per element: the position tells them
                // apart. The distribution is the input's, whose columns
                // pass through.
                node.pk.push(phys + 1);
                let keep = (0..log).chain([phys, phys + 1]).collect();
                self.keep_keys(node, keep)
            }
            LogicalPlan::HopWindow {
                input,
                time_col,
                window,
            } => {
                let mut node = self.plan(input)?;
                let (log, phys) = (input.fields().len(), node.types.len());
                node.frag.nodes.push(NodeDesc::HopWindow {
                    time_col: time_col.clone(),
                    window: *window,
                    input_width: Some(phys),
                });
                node.types.extend([time_col.return_type(); 2]);
                // A row is in several windows: the window start tells them
                // apart. The distribution is the input's, whose columns
                // pass through.
                node.pk.push(phys);
                if log == phys {
                    return Ok(node);
                }
                // Back to the logical layout, hidden keys after it.
                let keep = (0..log).chain([phys, phys + 1]).collect();
                self.keep_keys(node, keep)
            }
            LogicalPlan::Filter { input, predicate } => {
                let mut node = self.plan(input)?;
                node.frag.nodes.push(NodeDesc::Filter {
                    predicate: predicate.clone(),
                });
                Ok(node)
            }
            LogicalPlan::Project { input, exprs, .. } => {
                let node = match self.plan_dynamic_filter(input, exprs)? {
                    Some(node) => node,
                    None => self.plan(input)?,
                };
                let mut all = exprs.clone();
                // keep stream key and distribution columns (hidden)
                let mut extra = node.pk.clone();
                if let Dist::Hash(d) = &node.dist {
                    extra.extend(d.iter().copied());
                }
                for k in extra {
                    let present = all
                        .iter()
                        .any(|e| matches!(e, Expr::InputRef { index, .. } if *index == k));
                    if !present {
                        all.push(Expr::input_ref(k, node.types[k]));
                    }
                }
                Ok(self.project(node, all))
            }
            LogicalPlan::Aggregate {
                input,
                group_by,
                aggs,
                ..
            } => {
                let node = self.plan(input)?;
                let singleton = group_by.is_empty();
                let (mut frag, types, _) = if singleton {
                    self.exchange(node, EdgeSpec::Simple, true)
                } else if node.dist == Dist::Hash(group_by.clone()) {
                    (node.frag, node.types, node.pk)
                } else {
                    self.exchange(node, EdgeSpec::Hash(group_by.clone()), false)
                };
                let table_id = self.table_id();
                let key_types: Vec<DataType> = group_by.iter().map(|&i| types[i]).collect();
                let emit_on_window_close = self
                    .window_close_agg
                    .is_some_and(|p| std::ptr::eq(p, plan as *const LogicalPlan));
                frag.nodes.push(NodeDesc::HashAgg {
                    group_by: group_by.clone(),
                    calls: aggs.clone(),
                    emit_on_window_close,
                    append_only_input: input.append_only(),
                    table: StateTableDesc {
                        table_id,
                        pk_types: key_types.clone(),
                        pk_desc: vec![],
                        dist_in_pk: (0..group_by.len()).collect(),
                        value_types: None,
                    },
                });
                let mut out_types = key_types;
                out_types.extend(aggs.iter().map(|a| a.return_type));
                let g = group_by.len();
                Ok(Node {
                    frag,
                    types: out_types,
                    pk: (0..g).collect(),
                    dist: if singleton {
                        Dist::Single
                    } else {
                        Dist::Hash((0..g).collect())
                    },
                })
            }
            LogicalPlan::Join {
                left,
                right,
                kind,
                on,
                condition,
            } => {
                // Without an equality key (a cross or inequality join, an
                // uncorrelated EXISTS / NOT IN), every row has the empty
                // key: it hashes to one vnode, so one actor joins them all.
                let l = self.plan(left)?;
                let r = self.plan(right)?;
                // Children may carry hidden key columns after their logical
                // ones: map logical positions of the right side past them.
                let (llog, rlog) = (left.fields().len(), right.fields().len());
                let lphys = l.types.len();
                let remap = move |i: usize| if i < llog { i } else { i - llog + lphys };
                let condition = condition.clone().map(|mut c| {
                    c.map_input_refs(&mut |i| remap(i));
                    c
                });
                let lkeys: Vec<usize> = on.iter().map(|p| p.0).collect();
                let rkeys: Vec<usize> = on.iter().map(|p| p.1).collect();
                let (lw, rw) = (l.types.len(), r.types.len());
                let (lpk, rpk) = (l.pk.clone(), r.pk.clone());
                let (ltypes, rtypes) = (l.types.clone(), r.types.clone());
                self.fragments.push(l.frag);
                let li = self.fragments.len() - 1;
                self.fragments.push(r.frag);
                let ri = self.fragments.len() - 1;
                let lt = self.table_id();
                let rt = self.table_id();
                let side_table =
                    |table_id, keys: &[usize], pk: &[usize], types: &[DataType]| StateTableDesc {
                        table_id,
                        pk_types: keys.iter().chain(pk.iter()).map(|&i| types[i]).collect(),
                        pk_desc: vec![],
                        dist_in_pk: (0..keys.len()).collect(),
                        value_types: Some(types.to_vec()),
                    };
                let left_only = kind.left_only();
                let mut left_table = side_table(lt, &lkeys, &lpk, &ltypes);
                if left_only {
                    // A semi/anti join keeps each left row's degree after it.
                    if let Some(v) = &mut left_table.value_types {
                        v.push(DataType::Int64);
                    }
                }
                let node = NodeDesc::HashJoin {
                    kind: *kind,
                    left_keys: lkeys.clone(),
                    right_keys: rkeys.clone(),
                    left_pk: lpk.clone(),
                    right_pk: rpk.clone(),
                    left_width: lw,
                    right_width: rw,
                    condition,
                    left_table,
                    right_table: side_table(rt, &rkeys, &rpk, &rtypes),
                };
                let mut types = ltypes;
                // The join keys belong to the stream key: a row whose join
                // key changes is retracted by one join actor and added by
                // another, and only distinct keys keep those two changes
                // from racing downstream.
                let mut pk = lpk;
                let out_keys: Vec<usize> = if left_only {
                    lkeys.clone()
                } else {
                    types.extend(rtypes);
                    pk.extend(rpk.iter().map(|&i| i + lw));
                    lkeys
                        .iter()
                        .copied()
                        .chain(rkeys.iter().map(|&i| i + lw))
                        .collect()
                };
                for k in out_keys {
                    if !pk.contains(&k) {
                        pk.push(k);
                    }
                }
                let dist = match kind {
                    // All rows on one vnode: let a consumer with state
                    // spread them again.
                    _ if lkeys.is_empty() => Dist::Any,
                    JoinKind::Inner | JoinKind::Left | JoinKind::LeftSemi | JoinKind::LeftAnti => {
                        Dist::Hash(lkeys.clone())
                    }
                    JoinKind::Right => Dist::Hash(rkeys.iter().map(|&i| i + lw).collect()),
                    JoinKind::Full => Dist::Any,
                };
                let node = Node {
                    frag: PlanFragment {
                        nodes: vec![node],
                        inputs: vec![
                            (Upstream::Local(li), EdgeSpec::Hash(lkeys)),
                            (Upstream::Local(ri), EdgeSpec::Hash(rkeys)),
                        ],
                        singleton: false,
                        source: SourceDesc::None,
                    },
                    types,
                    pk,
                    dist,
                };
                if lphys == llog && (rw == rlog || left_only) {
                    return Ok(node);
                }
                // Restore the logical layout, hidden keys after it.
                let keep: Vec<usize> = if left_only {
                    (0..llog).collect()
                } else {
                    (0..llog).chain(lphys..lphys + rlog).collect()
                };
                self.keep_keys(node, keep)
            }
            LogicalPlan::Union { inputs } => self.plan_union(inputs),
            LogicalPlan::TopN {
                input,
                order,
                limit,
                offset,
            } => {
                let node = self.plan(input)?;
                if limit.is_none() && *offset == 0 {
                    // ORDER BY alone means nothing for a maintained view.
                    return Ok(node);
                }
                let (mut frag, types, pk) = self.exchange(node, EdgeSpec::Simple, true);
                let table_id = self.table_id();
                frag.nodes.push(NodeDesc::TopN {
                    order: order.clone(),
                    limit: *limit,
                    offset: *offset,
                    pk: pk.clone(),
                    table: StateTableDesc {
                        table_id,
                        pk_types: pk.iter().map(|&i| types[i]).collect(),
                        pk_desc: vec![],
                        dist_in_pk: vec![],
                        value_types: Some(types.clone()),
                    },
                });
                Ok(Node {
                    frag,
                    types,
                    pk,
                    dist: Dist::Single,
                })
            }
        }
    }

    /// UNION ALL: every branch is projected to `visible ++ [branch id] ++
    /// every branch's stream key` (NULL outside its own branch), which makes
    /// the union's stream key `[branch id, keys...]`.
    fn plan_union(&mut self, inputs: &[LogicalPlan]) -> PResult<Node> {
        let mut nodes = Vec::new();
        for p in inputs {
            nodes.push(self.plan(p)?);
        }
        let visible = inputs.first().map(|p| p.fields().len()).unwrap_or(0);
        let key_types: Vec<Vec<DataType>> = nodes
            .iter()
            .map(|n| n.pk.iter().map(|&i| n.types[i]).collect())
            .collect();
        let mut frag_inputs = Vec::new();
        let mut out_types = Vec::new();
        let n_keys: usize = key_types.iter().map(|k| k.len()).sum();
        for (b, node) in nodes.into_iter().enumerate() {
            let mut exprs: Vec<Expr> = (0..visible)
                .map(|i| Expr::input_ref(i, node.types[i]))
                .collect();
            exprs.push(Expr::literal(
                Some(ScalarValue::Int32(b as i32)),
                DataType::Int32,
            ));
            for (bb, kt) in key_types.iter().enumerate() {
                for (j, t) in kt.iter().enumerate() {
                    if bb == b {
                        exprs.push(Expr::input_ref(node.pk[j], *t));
                    } else {
                        exprs.push(Expr::literal(None::<ScalarValue> as Datum, *t));
                    }
                }
            }
            let mut node = node;
            node.frag.nodes.push(NodeDesc::Project {
                exprs: exprs.clone(),
            });
            out_types = exprs.iter().map(|e| e.return_type()).collect();
            self.fragments.push(node.frag);
            let key: Vec<usize> = (visible..visible + 1 + n_keys).collect();
            frag_inputs.push((
                Upstream::Local(self.fragments.len() - 1),
                EdgeSpec::Hash(key),
            ));
        }
        let key: Vec<usize> = (visible..visible + 1 + n_keys).collect();
        Ok(Node {
            frag: PlanFragment {
                nodes: vec![NodeDesc::Union],
                inputs: frag_inputs,
                singleton: false,
                source: SourceDesc::None,
            },
            types: out_types,
            pk: key.clone(),
            dist: Dist::Hash(key),
        })
    }
}

/// The fragment graph of a table: a fragment materializing the rows DML
/// (and a connector, if any, read in splits by a parallel source fragment)
/// send it, hash-distributed by the pk.
pub fn plan_table(
    table_id: TableId,
    columns: &[ColumnDesc],
    pk: &[usize],
    user_pk: bool,
    on_conflict: OnConflict,
    connector: Option<(SplitSourceDesc, TableId)>,
) -> PlanGraph {
    let types: Vec<DataType> = columns.iter().map(|c| c.data_type).collect();
    let mut fragments = Vec::new();
    let mut inputs = Vec::new();
    let mut internal_tables = Vec::new();
    if let Some((desc, progress_table)) = connector {
        internal_tables.push(progress_table);
        fragments.push(PlanFragment {
            nodes: vec![],
            inputs: vec![],
            singleton: false,
            source: SourceDesc::Splits {
                desc,
                state: SourceDesc::split_state(progress_table),
            },
        });
        inputs.push((Upstream::Local(0), EdgeSpec::Hash(pk.to_vec())));
    }
    fragments.push(PlanFragment {
        nodes: vec![NodeDesc::Materialize {
            table: StateTableDesc {
                table_id,
                pk_types: pk.iter().map(|&i| types[i]).collect(),
                pk_desc: vec![],
                dist_in_pk: (0..pk.len()).collect(),
                value_types: Some(types.clone()),
            },
            pk: pk.to_vec(),
            dist_key: pk.to_vec(),
            handle_conflicts: true,
            inserts_are_new: !user_pk,
            on_conflict,
        }],
        inputs,
        singleton: false,
        source: SourceDesc::Table,
    });
    PlanGraph {
        fragments,
        columns: columns.to_vec(),
        pk: pk.to_vec(),
        dist_key: pk.to_vec(),
        singleton: false,
        internal_tables,
        views: Vec::new(),
        sources: vec![],
    }
}
