//! Row-oriented change batches.
//!
//! A [`StreamChunk`] is a batch of rows, each tagged with an [`Op`]. Every
//! streaming operator consumes and produces chunks and must handle all four
//! ops: an update is a `UpdateDelete` immediately followed by its
//! `UpdateInsert`, and an operator that cannot keep the pair together (for
//! instance because the two rows go to different vnodes) turns it into a
//! plain `Delete` and `Insert`.

use std::fmt;

use super::text::{format_datum, parse_datum};
use super::types::{DataType, Row};

/// The change a row in a chunk stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Insert,
    Delete,
    UpdateDelete,
    UpdateInsert,
}

impl Op {
    /// Whether the row is added (`Insert`, `UpdateInsert`) rather than retracted.
    pub fn is_insert(self) -> bool {
        matches!(self, Op::Insert | Op::UpdateInsert)
    }

    /// The op with the update pairing dropped.
    pub fn normalize(self) -> Op {
        match self {
            Op::Insert | Op::UpdateInsert => Op::Insert,
            Op::Delete | Op::UpdateDelete => Op::Delete,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Op::Insert => "+",
            Op::Delete => "-",
            Op::UpdateDelete => "U-",
            Op::UpdateInsert => "U+",
        }
    }
}

/// The preferred number of rows in a chunk built by an operator.
pub const CHUNK_SIZE: usize = 1024;

/// A batch of changes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamChunk {
    pub ops: Vec<Op>,
    pub rows: Vec<Row>,
}

impl StreamChunk {
    pub fn new(ops: Vec<Op>, rows: Vec<Row>) -> Self {
        debug_assert_eq!(ops.len(), rows.len());
        StreamChunk { ops, rows }
    }

    pub fn with_capacity(n: usize) -> Self {
        StreamChunk {
            ops: Vec::with_capacity(n),
            rows: Vec::with_capacity(n),
        }
    }

    /// A chunk of inserts.
    pub fn inserts(rows: Vec<Row>) -> Self {
        StreamChunk {
            ops: vec![Op::Insert; rows.len()],
            rows,
        }
    }

    pub fn push(&mut self, op: Op, row: Row) {
        self.ops.push(op);
        self.rows.push(row);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (Op, &Row)> {
        self.ops.iter().copied().zip(self.rows.iter())
    }

    pub fn into_iter_rows(self) -> impl Iterator<Item = (Op, Row)> {
        self.ops.into_iter().zip(self.rows)
    }

    /// Parse the text fixture format used by unit tests:
    ///
    /// ```text
    /// + 1 foo
    /// - 2 .       (a dot is NULL)
    /// U- 3 x
    /// U+ 3 y
    /// ```
    ///
    /// Values are separated by whitespace and parsed as the given types.
    pub fn from_pretty(text: &str, types: &[DataType]) -> Self {
        let mut chunk = StreamChunk::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let mut parts = line.split_whitespace();
            let op = match parts.next() {
                Some("+") => Op::Insert,
                Some("-") => Op::Delete,
                Some("U-") => Op::UpdateDelete,
                Some("U+") => Op::UpdateInsert,
                other => panic!("bad op {other:?} in fixture line {line:?}"),
            };
            let row: Row = parts
                .zip(types)
                .map(|(s, ty)| {
                    if s == "." {
                        None
                    } else {
                        Some(
                            parse_datum(*ty, s)
                                .unwrap_or_else(|e| panic!("bad value {s:?} in fixture: {e}")),
                        )
                    }
                })
                .collect();
            assert_eq!(
                row.len(),
                types.len(),
                "wrong arity in fixture line {line:?}"
            );
            chunk.push(op, row);
        }
        chunk
    }

    /// Ops merged into net changes per row, sorted: the form tests compare.
    pub fn to_pretty(&self) -> String {
        let mut out = String::new();
        for (op, row) in self.iter() {
            out.push_str(op.symbol());
            for d in row {
                out.push(' ');
                match d {
                    None => out.push('.'),
                    Some(v) => out.push_str(&format_datum(v)),
                }
            }
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for StreamChunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_pretty())
    }
}

impl Op {
    /// An update half seen without its partner becomes a plain op.
    pub fn normalize_unpaired(self) -> Op {
        self.normalize()
    }
}
