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
//! The smaller input is the build side: hashed once, then probed by each row
//! of the other side. Either side may be the one to pad, so "pad the probe
//! row when it found nothing" and "pad the build rows nobody matched" are
//! both handled, whatever the join kind; output rows are always left columns
//! then right columns.

use super::hash::FastMap;
use super::{check_expr, check_indices, BatchResult};
use crate::common::{Datum, Row};
use crate::expr::Expr;
use crate::planner::logical::JoinKind;

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
    let pad_left = matches!(kind, JoinKind::Left | JoinKind::Full);
    let pad_right = matches!(kind, JoinKind::Right | JoinKind::Full);

    // Build on the smaller side (ties: the right, so that a LEFT join keeps
    // its left rows' order).
    let build_is_left = left.len() < right.len();
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

/// Build rows grouped by key: `head[key]` is the first row with that key,
/// `next[i]` the row after row `i` with the same key, in input order.
struct HashTable {
    head: FastMap<Vec<Datum>, usize>,
    next: Vec<usize>,
}

impl HashTable {
    fn build(rows: &[Row], keys: &[usize]) -> Self {
        let mut head: FastMap<Vec<Datum>, usize> = FastMap::default();
        let mut next = vec![NONE; rows.len()];
        let mut key = Vec::with_capacity(keys.len());
        // Prepending while walking backwards leaves each chain in input order.
        for (i, row) in rows.iter().enumerate().rev() {
            if !fill_key(&mut key, row, keys) {
                continue; // a NULL key matches nothing
            }
            match head.get_mut(key.as_slice()) {
                Some(h) => {
                    next[i] = *h;
                    *h = i;
                }
                None => {
                    head.insert(key.clone(), i);
                }
            }
        }
        HashTable { head, next }
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
            let mut candidates = match &table {
                None => Candidates::All(0..build.len()),
                Some(t) if fill_key(&mut key, &probe_row, &self.probe.keys) => Candidates::Chain {
                    next: &t.next,
                    cur: t.head.get(key.as_slice()).copied().unwrap_or(NONE),
                },
                Some(_) => Candidates::All(0..0),
            };
            let mut probe_matched = false;
            for b in &mut candidates {
                self.concat(&mut joined, &probe_row, &build[b]);
                if let Some(c) = self.condition {
                    if !c.eval_predicate(&joined)? {
                        continue;
                    }
                }
                probe_matched = true;
                if self.build.pad {
                    build_matched[b] = true;
                }
                out.push(std::mem::replace(&mut joined, Vec::with_capacity(width)));
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
