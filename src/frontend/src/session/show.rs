//! `SHOW CLUSTER`, `SHOW FRAGMENTS`, `SHOW ACTORS` and `EXPLAIN`.

use super::ddl::upstream_snapshot;
use super::{fields, int, rows_result, text, FResult, LocalSession};
use crate::{FrontendError, StatementResult};
use ebbflow_common::ErrorKind;
use ebbflow_common::{DataType, Row};
use ebbflow_meta::fragment::Fragment;
use ebbflow_meta::graph::{EdgeSpec, PlanGraph, Upstream};
use ebbflow_meta::service::Parallelism;
use ebbflow_planner::stream::StreamPlanner;
use ebbflow_sql::BoundStatement;

impl LocalSession {
    pub(super) fn show_cluster(&self) -> StatementResult {
        let (workers, fragments) = self.meta.cluster_layout();
        let rows = {
            let mut rows = Vec::new();
            for w in &workers {
                for u in &w.units {
                    let mut actors = Vec::new();
                    for f in &fragments {
                        let ids: Vec<String> = f
                            .actors
                            .iter()
                            .filter(|a| a.unit == *u)
                            .map(|a| a.actor_id.to_string())
                            .collect();
                        if !ids.is_empty() {
                            actors.push(format!("fragment {}: [{}]", f.id, ids.join(",")));
                        }
                    }
                    rows.push(vec![
                        int(w.id as i32),
                        text(w.host.as_str()),
                        text(w.state.name()),
                        int(*u as i32),
                        text(actors.join("; ")),
                    ]);
                }
            }
            rows
        };
        rows_result(
            fields(&[
                ("worker_id", DataType::Int32),
                ("host", DataType::Varchar),
                ("state", DataType::Varchar),
                ("parallel_unit_id", DataType::Int32),
                ("actors", DataType::Varchar),
            ]),
            rows,
        )
    }

    /// The id of the relation `SHOW … FROM name` is restricted to.
    fn filter_table(&self, name: Option<String>) -> FResult<Option<u32>> {
        match name {
            None => Ok(None),
            Some(n) => self
                .meta
                .relation_by_name(&n)
                .map(|r| Some(r.id))
                .ok_or_else(|| {
                    FrontendError::new(
                        ErrorKind::UndefinedTable,
                        format!("relation \"{n}\" does not exist"),
                    )
                }),
        }
    }

    pub(super) fn show_fragments(&self, name: Option<String>) -> FResult<StatementResult> {
        let columns = [
            ("fragment_id", DataType::Int32),
            ("table_id", DataType::Int32),
            ("distribution_type", DataType::Varchar),
            ("executors", DataType::Varchar),
            ("parallelism", DataType::Int32),
        ];
        self.show_per_fragment(name, &columns, |f| {
            let nodes: Vec<&str> = f.nodes.iter().map(|n| n.name()).collect();
            vec![vec![
                int(f.id as i32),
                int(f.table_id as i32),
                text(if f.singleton { "single" } else { "hash" }),
                text(nodes.join(" -> ")),
                int(f.actors.len() as i32),
            ]]
        })
    }

    pub(super) fn show_actors(&self, name: Option<String>) -> FResult<StatementResult> {
        let columns = [
            ("actor_id", DataType::Int32),
            ("fragment_id", DataType::Int32),
            ("worker_id", DataType::Int32),
            ("parallel_unit_id", DataType::Int32),
            ("vnode_count", DataType::Int32),
        ];
        self.show_per_fragment(name, &columns, |f| {
            f.actors
                .iter()
                .map(|a| {
                    vec![
                        int(a.actor_id as i32),
                        int(f.id as i32),
                        int(a.worker as i32),
                        int(a.unit as i32),
                        int(a.vnodes.count() as i32),
                    ]
                })
                .collect()
        })
    }

    /// The rows `rows_of` makes of each fragment, of the relation `name`
    /// (of every relation without), under `columns`.
    fn show_per_fragment(
        &self,
        name: Option<String>,
        columns: &[(&str, DataType)],
        rows_of: impl Fn(&Fragment) -> Vec<Row>,
    ) -> FResult<StatementResult> {
        let filter = self.filter_table(name)?;
        let rows = self
            .meta
            .fragments(filter)
            .iter()
            .flat_map(rows_of)
            .collect();
        Ok(rows_result(fields(columns), rows))
    }

    pub(super) fn explain(&self, inner: BoundStatement) -> FResult<StatementResult> {
        let lines: Vec<String> = match inner {
            BoundStatement::CreateMaterializedView {
                plan,
                column_names,
                with_options,
                ..
            } => {
                let n = match self.parallelism_for(&with_options)? {
                    Parallelism::Adaptive | Parallelism::Custom => self.meta.total_units(),
                    Parallelism::Fixed(n) => n as usize,
                };
                // Plan with throw-away ids: EXPLAIN changes nothing.
                let upstream = upstream_snapshot(&self.meta);
                let mut next = 0u32;
                let mut alloc = || {
                    next += 1;
                    u32::MAX - next
                };
                let graph =
                    StreamPlanner::new(&upstream, &mut alloc).plan_mv(&plan, &column_names, 0)?;
                explain_graph(&graph, n)
            }
            BoundStatement::Query { plan, .. } => {
                plan.to_string().lines().map(String::from).collect()
            }
            other => vec![format!("{other:?}")],
        };
        Ok(rows_result(
            fields(&[("QUERY PLAN", DataType::Varchar)]),
            lines.into_iter().map(|l| vec![text(l)]).collect(),
        ))
    }
}

/// Fragment graph as text for EXPLAIN.
fn explain_graph(graph: &PlanGraph, parallelism: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, f) in graph.fragments.iter().enumerate().rev() {
        let par = if f.singleton { 1 } else { parallelism };
        lines.push(format!(
            "Fragment {i} ({}, parallelism {par})",
            if f.singleton { "single" } else { "hash" }
        ));
        for n in f.nodes.iter().rev() {
            lines.push(format!("  {}", n.name()));
        }
        for (up, spec) in &f.inputs {
            let from = match up {
                Upstream::Local(j) => format!("Fragment {j}"),
                Upstream::Existing(t) => format!("table {t}"),
            };
            let key = match spec {
                EdgeSpec::Hash(k) => format!(" by {k:?}"),
                _ => String::new(),
            };
            lines.push(format!("  Exchange ({}{key}) from {from}", spec.name()));
        }
    }
    lines
}
