//! Hash join (nested loop when there are no equi-join keys).
//!
//! Semantics, for every kind:
//! - a pair of rows joins when all `on` keys are equal and non-NULL (NULL
//!   never equals anything here, unlike in grouping) and the residual
//!   `condition`, evaluated over the concatenated row, is TRUE;
//! - LEFT/FULL also emit each left row that joined with nothing, padded with
//!   NULLs on the right; RIGHT/FULL do the same for right rows. A row whose
//!   key matched but whose every match failed the condition joined with
//!   nothing, so it is padded.
//!
//! - LEFT SEMI emits each left row that joins with at least one right row,
//!   once, and LEFT ANTI each left row that joins with none (a NULL key
//!   included); both emit left columns only.
//!
//! The smaller input is the build side: hashed once, then probed by each row
//! of the other side. Either side may be the one to pad, so "pad the probe
//! row when it found nothing" and "pad the build rows nobody matched" are
//! both handled, whatever the join kind; output rows are always left columns
//! then right columns.

use super::hash::FastMap;
use super::{check_expr, check_indices, BatchResult};
use ebbflow_common::{Datum, Row, ScalarValue};
use ebbflow_expr::Expr;
use ebbflow_planner::logical::JoinKind;

/// End of a chain in [`HashTable::next`].
const NONE: usize = usize::MAX;

/// Join `left` and `right` (of `widths` columns each).
pub fn execute_join(
    left: Vec<Row>,
    right: Vec<Row>,
    widths: (usize, usize),
    kind: JoinKind,
    on: &[(usize, usize)],
    condition: Option<&Expr>,
) -> BatchResult<Vec<Row>> {
    let (lw, rw) = widths;
    check_indices("join key", on.iter().map(|p| p.0), lw)?;
    check_indices("join key", on.iter().map(|p| p.1 + lw), lw + rw)?;
    if let Some(c) = condition {
        check_expr("join condition", c, lw + rw)?;
    }
    if kind.left_only() {
        return semi_join(left, &right, lw, kind, on, condition);
    }
    // Build on the smaller side (ties: the right, so that a LEFT join keeps
    // its left rows' order).
    let build_is_left = left.len() < right.len();
    join(left, right, widths, kind, on, condition, build_is_left)
}

/// The join with the build side chosen by the caller (tests run both).
fn join(
    left: Vec<Row>,
    right: Vec<Row>,
    (lw, rw): (usize, usize),
    kind: JoinKind,
    on: &[(usize, usize)],
    condition: Option<&Expr>,
    build_is_left: bool,
) -> BatchResult<Vec<Row>> {
    let pad_left = matches!(kind, JoinKind::Left | JoinKind::Full);
    let pad_right = matches!(kind, JoinKind::Right | JoinKind::Full);
    let (build, probe) = if build_is_left {
        (left, right)
    } else {
        (right, left)
    };
    let side = |left_side: bool| -> Side {
        let keys = on
            .iter()
            .map(|&(l, r)| if left_side { l } else { r })
            .collect();
        let (pad, width) = if left_side {
            (pad_left, lw)
        } else {
            (pad_right, rw)
        };
        Side { keys, pad, width }
    };
    let joiner = Joiner {
        build: side(build_is_left),
        probe: side(!build_is_left),
        build_is_left,
        condition,
    };
    joiner.run(build, probe)
}

/// LEFT SEMI / LEFT ANTI: the right side is the build side (a left row is
/// emitted once, or not, so only the existence of a partner matters), and
/// the left rows come out in input order. Terms of the condition over the
/// left row alone are checked once per left row, before any pairing.
fn semi_join(
    left: Vec<Row>,
    right: &[Row],
    lw: usize,
    kind: JoinKind,
    on: &[(usize, usize)],
    condition: Option<&Expr>,
) -> BatchResult<Vec<Row>> {
    let semi = kind == JoinKind::LeftSemi;
    let (left_terms, pair_terms) = condition
        .map(|c| c.clone().split_conjuncts_below(lw))
        .unwrap_or_default();
    let lkeys: Vec<usize> = on.iter().map(|p| p.0).collect();
    let rkeys: Vec<usize> = on.iter().map(|p| p.1).collect();
    let table = (!on.is_empty()).then(|| HashTable::build(right, &rkeys));
    let mut key = Vec::with_capacity(lkeys.len());
    let mut joined: Row = Vec::new();
    let mut out = Vec::new();
    for row in left {
        let candidates = match &table {
            None => Candidates::All(0..right.len()),
            Some(t) => Candidates::Chain {
                next: &t.next,
                cur: t.first_match(&row, &lkeys, &mut key),
            },
        };
        let mut matched = false;
        let mut can_match = true;
        for t in &left_terms {
            can_match = can_match && t.eval_predicate(&row)?;
        }
        for b in candidates.take_while(|_| can_match) {
            matched = true;
            if !pair_terms.is_empty() {
                joined.clear();
                joined.extend_from_slice(&row);
                joined.extend_from_slice(&right[b]);
                for t in &pair_terms {
                    matched = matched && t.eval_predicate(&joined)?;
                }
            }
            if matched {
                break;
            }
        }
        if matched == semi {
            out.push(row);
        }
    }
    Ok(out)
}

/// How one input takes part in the join.
struct Side {
    /// Its key column of each `on` pair.
    keys: Vec<usize>,
    /// Whether its unmatched rows are emitted padded with NULLs.
    pad: bool,
    width: usize,
}

struct Joiner<'a> {
    build: Side,
    probe: Side,
    build_is_left: bool,
    condition: Option<&'a Expr>,
}

/// Build rows grouped by key: `heads` maps a key to the first row with that
/// key, `next[i]` is the row after row `i` with the same key, in input order.
struct HashTable {
    heads: Heads,
    next: Vec<usize>,
}

/// The key → first row map. A single key column (the common case) is keyed
/// by the value itself: no allocation per key, no pointer to chase when
/// comparing keys, and probes borrow the value from the probe row.
enum Heads {
    Single(FastMap<ScalarValue, usize>),
    Multi(FastMap<Vec<Datum>, usize>),
}

impl HashTable {
    fn build(rows: &[Row], keys: &[usize]) -> Self {
        let mut next = vec![NONE; rows.len()];
        // Prepending while walking backwards leaves each chain in input
        // order. Rows with a NULL key are left out: they match nothing.
        let mut prepend = |head: &mut usize, i: usize| {
            next[i] = *head;
            *head = i;
        };
        let heads = match keys {
            &[col] => {
                let mut map: FastMap<ScalarValue, usize> = FastMap::default();
                for (i, row) in rows.iter().enumerate().rev() {
                    if let Some(v) = &row[col] {
                        match map.get_mut(v) {
                            Some(head) => prepend(head, i),
                            None => {
                                map.insert(v.clone(), i);
                            }
                        }
                    }
                }
                Heads::Single(map)
            }
            _ => {
                let mut map: FastMap<Vec<Datum>, usize> = FastMap::default();
                let mut key = Vec::with_capacity(keys.len());
                for (i, row) in rows.iter().enumerate().rev() {
                    if fill_key(&mut key, row, keys) {
                        match map.get_mut(key.as_slice()) {
                            Some(head) => prepend(head, i),
                            None => {
                                map.insert(key.clone(), i);
                            }
                        }
                    }
                }
                Heads::Multi(map)
            }
        };
        HashTable { heads, next }
    }

    /// The first build row `row` joins with on the keys, or [`NONE`].
    /// `buf` is scratch space for multi-column keys.
    fn first_match(&self, row: &Row, keys: &[usize], buf: &mut Vec<Datum>) -> usize {
        let head = match &self.heads {
            Heads::Single(map) => row[keys[0]].as_ref().and_then(|v| map.get(v)),
            Heads::Multi(map) => {
                if fill_key(buf, row, keys) {
                    map.get(buf.as_slice())
                } else {
                    None
                }
            }
        };
        head.copied().unwrap_or(NONE)
    }
}

/// Set `key` to the key columns of `row`; false if any of them is NULL.
fn fill_key(key: &mut Vec<Datum>, row: &Row, keys: &[usize]) -> bool {
    key.clear();
    for &i in keys {
        match &row[i] {
            None => return false,
            d => key.push(d.clone()),
        }
    }
    true
}

impl Joiner<'_> {
    fn run(&self, build: Vec<Row>, probe: Vec<Row>) -> BatchResult<Vec<Row>> {
        let width = self.build.width + self.probe.width;
        let table =
            (!self.build.keys.is_empty()).then(|| HashTable::build(&build, &self.build.keys));
        let mut build_matched = vec![false; if self.build.pad { build.len() } else { 0 }];
        let mut out = Vec::with_capacity(probe.len().max(build.len()));
        // Candidate output row, reused while the condition rejects pairs.
        let mut joined: Row = Vec::with_capacity(width);
        let mut key = Vec::with_capacity(self.probe.keys.len());

        for probe_row in probe {
            let candidates = match &table {
                None => Candidates::All(0..build.len()),
                Some(t) => Candidates::Chain {
                    next: &t.next,
                    cur: t.first_match(&probe_row, &self.probe.keys, &mut key),
                },
            };
            let mut probe_matched = false;
            match self.condition {
                Some(c) => {
                    for b in candidates {
                        self.concat(&mut joined, &probe_row, &build[b]);
                        if !c.eval_predicate(&joined)? {
                            continue;
                        }
                        probe_matched = true;
                        if self.build.pad {
                            build_matched[b] = true;
                        }
                        out.push(std::mem::replace(&mut joined, Vec::with_capacity(width)));
                    }
                }
                None => {
                    // Every candidate joins. Each output row but the last
                    // copies the probe row; the last takes it over (most
                    // probe rows of a key/foreign-key join have one match).
                    let mut pending = None;
                    for b in candidates {
                        if self.build.pad {
                            build_matched[b] = true;
                        }
                        if let Some(prev) = pending.replace(b) {
                            self.concat(&mut joined, &probe_row, &build[prev]);
                            out.push(std::mem::replace(&mut joined, Vec::with_capacity(width)));
                        }
                    }
                    if let Some(last) = pending {
                        out.push(self.concat_owned(probe_row, &build[last], width));
                        continue;
                    }
                }
            }
            if !probe_matched && self.probe.pad {
                out.push(self.pad(probe_row, self.build.width, !self.build_is_left));
            }
        }

        if self.build.pad {
            for (row, matched) in build.into_iter().zip(build_matched) {
                if !matched {
                    out.push(self.pad(row, self.probe.width, self.build_is_left));
                }
            }
        }
        Ok(out)
    }

    /// Set `joined` to the left row then the right row.
    fn concat(&self, joined: &mut Row, probe_row: &Row, build_row: &Row) {
        let (l, r) = if self.build_is_left {
            (build_row, probe_row)
        } else {
            (probe_row, build_row)
        };
        joined.clear();
        joined.extend_from_slice(l);
        joined.extend_from_slice(r);
    }

    /// The output row of `probe_row` and `build_row`, reusing the probe row.
    fn concat_owned(&self, mut probe_row: Row, build_row: &Row, width: usize) -> Row {
        if self.build_is_left {
            let mut joined = Vec::with_capacity(width);
            joined.extend_from_slice(build_row);
            joined.append(&mut probe_row);
            joined
        } else {
            probe_row.reserve_exact(build_row.len());
            probe_row.extend_from_slice(build_row);
            probe_row
        }
    }

    /// `row` with `other_width` NULLs on the other side.
    fn pad(&self, mut row: Row, other_width: usize, row_is_left: bool) -> Row {
        if row_is_left {
            row.resize(row.len() + other_width, None);
            row
        } else {
            let mut padded: Row = vec![None; other_width];
            padded.extend(row);
            padded
        }
    }
}

/// The build rows a probe row may join with.
enum Candidates<'a> {
    /// Every build row (no equi-join keys: a nested loop).
    All(std::ops::Range<usize>),
    /// The rows with the probe row's key.
    Chain { next: &'a [usize], cur: usize },
}

impl Iterator for Candidates<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Candidates::All(r) => r.next(),
            Candidates::Chain { next, cur } => {
                if *cur == NONE {
                    return None;
                }
                let i = *cur;
                *cur = next[i];
                Some(i)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::execute;
    use super::super::test_utils::*;
    use super::*;
    use ebbflow_common::DataType::{self, Boolean, Int32, Varchar};
    use ebbflow_common::ErrorKind;
    use ebbflow_planner::logical::LogicalPlan;

    const L: &[DataType] = &[Int32, Varchar];
    const R: &[DataType] = &[Int32, Boolean];

    /// Left keys 1, 2 (twice), NULL, 4, 5; right keys 1, 2 (twice), NULL, 3, 5.
    /// Right column 1 is the residual condition in the tests that use one;
    /// key 5 matches on the key but always fails it.
    const LEFT: &str = "1 a\n2 b\n2 bb\n. n\n4 d\n5 e";
    const RIGHT: &str = "1 t\n2 t\n2 f\n. t\n3 t\n5 f";

    /// Run the join with both build sides and check they agree with `expected`.
    fn check(
        (left, right): (&str, &str),
        kind: JoinKind,
        on: &[(usize, usize)],
        condition: Option<Expr>,
        expected: &str,
    ) {
        for build_is_left in [false, true] {
            let out = join(
                parse_rows(left, L),
                parse_rows(right, R),
                (2, 2),
                kind,
                on,
                condition.as_ref(),
                build_is_left,
            )
            .unwrap();
            assert_rows(&out, expected);
        }
    }

    const ON_ID: &[(usize, usize)] = &[(0, 0)];

    fn flag() -> Option<Expr> {
        Some(col(3, Boolean))
    }

    #[test]
    fn inner_null_keys_never_match() {
        check(
            (LEFT, RIGHT),
            JoinKind::Inner,
            ON_ID,
            None,
            "1 a 1 t\n2 b 2 t\n2 b 2 f\n2 bb 2 t\n2 bb 2 f\n5 e 5 f",
        );
    }

    #[test]
    fn left_pads_unmatched_left_rows() {
        check(
            (LEFT, RIGHT),
            JoinKind::Left,
            ON_ID,
            None,
            "1 a 1 t\n2 b 2 t\n2 b 2 f\n2 bb 2 t\n2 bb 2 f\n5 e 5 f\n. n . .\n4 d . .",
        );
    }

    #[test]
    fn right_pads_unmatched_right_rows() {
        check(
            (LEFT, RIGHT),
            JoinKind::Right,
            ON_ID,
            None,
            "1 a 1 t\n2 b 2 t\n2 b 2 f\n2 bb 2 t\n2 bb 2 f\n5 e 5 f\n. . . t\n. . 3 t",
        );
    }

    #[test]
    fn full_pads_both_sides() {
        check(
            (LEFT, RIGHT),
            JoinKind::Full,
            ON_ID,
            None,
            "1 a 1 t\n2 b 2 t\n2 b 2 f\n2 bb 2 t\n2 bb 2 f\n5 e 5 f
             . n . .\n4 d . .\n. . . t\n. . 3 t",
        );
    }

    #[test]
    fn inner_with_residual_condition() {
        check(
            (LEFT, RIGHT),
            JoinKind::Inner,
            ON_ID,
            flag(),
            "1 a 1 t\n2 b 2 t\n2 bb 2 t",
        );
    }

    #[test]
    fn left_with_residual_pads_rows_whose_matches_all_fail() {
        // `5 e` matches `5 f` on the key, but the condition rejects the pair.
        check(
            (LEFT, RIGHT),
            JoinKind::Left,
            ON_ID,
            flag(),
            "1 a 1 t\n2 b 2 t\n2 bb 2 t\n. n . .\n4 d . .\n5 e . .",
        );
    }

    #[test]
    fn right_with_residual_pads_rows_whose_matches_all_fail() {
        // `2 f` matches two left rows on the key; both pairs fail.
        check(
            (LEFT, RIGHT),
            JoinKind::Right,
            ON_ID,
            flag(),
            "1 a 1 t\n2 b 2 t\n2 bb 2 t\n. . . t\n. . 3 t\n. . 2 f\n. . 5 f",
        );
    }

    #[test]
    fn full_with_residual() {
        check(
            (LEFT, RIGHT),
            JoinKind::Full,
            ON_ID,
            flag(),
            "1 a 1 t\n2 b 2 t\n2 bb 2 t\n. n . .\n4 d . .\n5 e . .
             . . . t\n. . 3 t\n. . 2 f\n. . 5 f",
        );
    }

    #[test]
    fn null_condition_rejects_like_false() {
        check(("1 a", "1 ."), JoinKind::Left, ON_ID, flag(), "1 a . .");
    }

    #[test]
    fn nested_loop_cross_join() {
        check(
            ("1 a\n2 b", "7 t\n8 f\n9 ."),
            JoinKind::Inner,
            &[],
            None,
            "1 a 7 t\n1 a 8 f\n1 a 9 .\n2 b 7 t\n2 b 8 f\n2 b 9 .",
        );
    }

    #[test]
    fn nested_loop_outer_joins_with_condition() {
        check(
            ("1 a\n2 b", "7 f\n8 f"),
            JoinKind::Left,
            &[],
            flag(),
            "1 a . .\n2 b . .",
        );
        check(
            ("1 a", "7 t\n8 f"),
            JoinKind::Full,
            &[],
            flag(),
            "1 a 7 t\n. . 8 f",
        );
    }

    #[test]
    fn outer_joins_with_an_empty_side() {
        check(
            ("1 a\n. b", ""),
            JoinKind::Left,
            ON_ID,
            None,
            "1 a . .\n. b . .",
        );
        check(("", "1 t"), JoinKind::Left, ON_ID, None, "");
        check(("", "1 t"), JoinKind::Right, ON_ID, None, ". . 1 t");
        check(("", ""), JoinKind::Full, ON_ID, None, "");
        check(("1 a", ""), JoinKind::Full, &[], None, "1 a . .");
    }

    #[test]
    fn semi_and_anti_emit_left_rows_once() {
        let run = |kind, on: &[(usize, usize)], condition: Option<Expr>| {
            let out = execute_join(
                parse_rows(LEFT, L),
                parse_rows(RIGHT, R),
                (2, 2),
                kind,
                on,
                condition.as_ref(),
            )
            .unwrap();
            out
        };
        // `2 b` has two partners and comes out once; NULL keys match nothing.
        assert_rows_ordered(&run(JoinKind::LeftSemi, ON_ID, None), "1 a\n2 b\n2 bb\n5 e");
        assert_rows_ordered(&run(JoinKind::LeftAnti, ON_ID, None), ". n\n4 d");
        // `5 e`'s only partner fails the condition.
        assert_rows_ordered(&run(JoinKind::LeftSemi, ON_ID, flag()), "1 a\n2 b\n2 bb");
        assert_rows_ordered(&run(JoinKind::LeftAnti, ON_ID, flag()), ". n\n4 d\n5 e");
        // Without keys: any right row passing the condition.
        assert_rows_ordered(&run(JoinKind::LeftSemi, &[], flag()), LEFT);
        let none = execute_join(
            parse_rows(LEFT, L),
            vec![],
            (2, 2),
            JoinKind::LeftAnti,
            &[],
            None,
        )
        .unwrap();
        assert_rows_ordered(&none, LEFT);
    }

    #[test]
    fn multi_key_join_with_partial_nulls() {
        // Keys (c0, c1) = (c0, c1) with a varchar/bool mismatch avoided by
        // joining a relation with itself.
        let src = MockSource::new().with_table("t", &[Int32, Int32], "1 1\n1 .\n. 1\n1 2");
        let plan = LogicalPlan::Join {
            left: Box::new(src.scan_plan("t")),
            right: Box::new(src.scan_plan("t")),
            kind: JoinKind::Inner,
            on: vec![(0, 0), (1, 1)],
            condition: None,
        };
        assert_rows(&execute(&plan, &src).unwrap(), "1 1 1 1\n1 2 1 2");
    }

    #[test]
    fn output_follows_probe_order_with_matches_in_build_order() {
        // Left is larger, so right is the build side: left order is kept,
        // and each left row's matches come in right input order.
        let out = execute_join(
            parse_rows("2 x\n1 y\n2 z\n3 w", L),
            parse_rows("2 t\n2 f\n1 t", R),
            (2, 2),
            JoinKind::Left,
            ON_ID,
            None,
        )
        .unwrap();
        assert_rows_ordered(&out, "2 x 2 t\n2 x 2 f\n1 y 1 t\n2 z 2 t\n2 z 2 f\n3 w . .");
    }

    #[test]
    fn key_type_mismatch_is_internal_error() {
        let src = MockSource::new().with_table("a", &[Int32], "1").with_table(
            "b",
            &[DataType::Int64],
            "1",
        );
        let plan = LogicalPlan::Join {
            left: Box::new(src.scan_plan("a")),
            right: Box::new(src.scan_plan("b")),
            kind: JoinKind::Inner,
            on: vec![(0, 0)],
            condition: None,
        };
        assert_eq!(
            execute(&plan, &src).unwrap_err().kind(),
            ErrorKind::InternalError
        );
    }

    #[test]
    fn bad_key_index_is_internal_error() {
        let err =
            execute_join(vec![], vec![], (2, 2), JoinKind::Inner, &[(0, 2)], None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InternalError);
        let cond = col(4, Boolean);
        let err =
            execute_join(vec![], vec![], (2, 2), JoinKind::Inner, &[], Some(&cond)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InternalError);
    }
}
