//! The dynamic filter's plan: a relation filtered by a comparison with a
//! one-row aggregate, spread over the actors with the row broadcast (see
//! `stream::executor::dynamic_filter`).

use super::{Dist, Node, PResult, StreamPlanner};
use crate::logical::{JoinKind, LogicalPlan};
use crate::PlanError;
use ebbflow_expr::{Expr, Func};
use ebbflow_meta::graph::{EdgeSpec, PlanFragment, Upstream};
use ebbflow_plan::{NodeDesc, SourceDesc, StateTableDesc};

impl StreamPlanner<'_> {
    /// A dynamic filter (see `stream::executor::dynamic_filter`) for the
    /// input of a projection that reads only left columns, when that input
    /// is a join without an equality key of a relation and a one-row
    /// aggregate whose columns only one comparison reads: the filter over
    /// the LEFT JOIN of a scalar subquery (`WHERE t.v > (SELECT max(v) FROM
    /// u)`, or q102's HAVING), or an inner join's condition (`FROM t,
    /// (SELECT max(v) AS m FROM u) s WHERE t.v > s.m`). `None`: the input
    /// is planned as it is (a join on one actor).
    pub(super) fn plan_dynamic_filter(
        &mut self,
        input: &LogicalPlan,
        exprs: &[Expr],
    ) -> PResult<Option<Node>> {
        let (join, mut terms) = match input {
            LogicalPlan::Filter { input, predicate } => {
                (input.as_ref(), predicate.clone().into_conjuncts())
            }
            other => (other, Vec::new()),
        };
        let LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            condition,
        } = join
        else {
            return Ok(None);
        };
        if !on.is_empty() || !at_most_one_row(right) {
            return Ok(None);
        }
        match (kind, condition) {
            (JoinKind::Inner, Some(c)) => terms.extend(c.clone().into_conjuncts()),
            (JoinKind::Inner | JoinKind::Left, None) => {}
            _ => return Ok(None),
        }
        let n = left.fields().len();
        let refs = |e: &Expr| {
            let mut r = Vec::new();
            e.collect_input_refs(&mut r);
            r
        };
        if exprs.iter().any(|e| refs(e).iter().any(|&i| i >= n)) {
            return Ok(None);
        }
        let (with_right, rest): (Vec<Expr>, Vec<Expr>) = terms
            .into_iter()
            .partition(|t| refs(t).iter().any(|&i| i >= n));
        let [Expr::Func { func, args, .. }] = with_right.as_slice() else {
            return Ok(None);
        };
        let flipped = match func {
            Func::Lt => Func::Gt,
            Func::LtEq => Func::GtEq,
            Func::Gt => Func::Lt,
            Func::GtEq => Func::LtEq,
            _ => return Ok(None),
        };
        let [a, b] = args.as_slice() else {
            return Ok(None);
        };
        let left_only = |e: &Expr| refs(e).iter().all(|&i| i < n);
        let right_only = |e: &Expr| {
            let r = refs(e);
            !r.is_empty() && r.iter().all(|&i| i >= n)
        };
        let (key, cmp, bound) = if left_only(a) && right_only(b) {
            (a.clone(), *func, b.clone())
        } else if left_only(b) && right_only(a) {
            (b.clone(), flipped, a.clone())
        } else {
            return Ok(None);
        };
        let mut bound = bound;
        bound.map_input_refs(&mut |i| i - n);

        let l = self.plan(left)?;
        let r = self.plan(right)?;
        let (types, pk) = (l.types.clone(), l.pk.clone());
        self.fragments.push(l.frag);
        let li = self.fragments.len() - 1;
        self.fragments.push(r.frag);
        let ri = self.fragments.len() - 1;
        let left_table = StateTableDesc {
            table_id: self.table_id(),
            pk_types: pk.iter().map(|&i| types[i]).collect(),
            pk_desc: vec![],
            dist_in_pk: (0..pk.len()).collect(),
            value_types: Some(types.clone()),
        };
        // The right row (any width) and the epoch it was saved at.
        let right_table = StateTableDesc {
            table_id: self.table_id(),
            pk_types: vec![],
            pk_desc: vec![],
            dist_in_pk: vec![],
            value_types: None,
        };
        let mut nodes = vec![NodeDesc::DynamicFilter {
            key,
            cmp,
            bound,
            left_pk: pk.clone(),
            left_table,
            right_table,
        }];
        let mut rest = rest.into_iter();
        if let Some(first) = rest.next() {
            let mut predicate = first;
            for t in rest {
                predicate = ebbflow_expr::build_func(Func::And, vec![predicate, t])
                    .map_err(|e| PlanError::internal(e.to_string()))?;
            }
            nodes.push(NodeDesc::Filter { predicate });
        }
        Ok(Some(Node {
            frag: PlanFragment {
                nodes,
                inputs: vec![
                    (Upstream::Local(li), EdgeSpec::Hash(pk.clone())),
                    (Upstream::Local(ri), EdgeSpec::Broadcast),
                ],
                singleton: false,
                source: SourceDesc::None,
            },
            types,
            dist: Dist::Hash(pk.clone()),
            pk,
        }))
    }
}

/// Whether `plan` has at most one row whatever the data: a global
/// aggregate, under projections and filters.
fn at_most_one_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Aggregate { group_by, .. } => group_by.is_empty(),
        LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } => {
            at_most_one_row(input)
        }
        _ => false,
    }
}
