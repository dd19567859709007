//! Change batches, stored by column.
//!
//! A [`StreamChunk`] is a batch of rows, each tagged with an [`Op`]. Every
//! streaming operator consumes and produces chunks and must handle all four
//! ops: an update is a `UpdateDelete` immediately followed by its
//! `UpdateInsert`, and an operator that cannot keep the pair together (for
//! instance because the two rows go to different vnodes) turns it into a
//! plain `Delete` and `Insert`.

use std::fmt;

use arrow_array::BooleanArray;
use arrow_buffer::BooleanBuffer;

use super::column::{datum_ref, Column, ColumnBuilder, DatumRef};
use super::text::{format_datum, parse_datum};
use super::types::{DataType, Datum, Row};

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

/// A batch of changes: one [`Column`] per output column, an op per row, and
/// a visibility bitmap (rows whose bit is clear are not there; `None` is all
/// visible). Columns are shared, not copied, between chunks: a filter only
/// sets visibility, and a hash exchange sends each output the same columns
/// with its own visibility.
#[derive(Clone, Debug, Default)]
pub struct StreamChunk {
    ops: Vec<Op>,
    columns: Vec<Column>,
    visibility: Option<BooleanBuffer>,
}

impl StreamChunk {
    /// A chunk of these columns, each as long as `ops`.
    pub fn new(ops: Vec<Op>, columns: Vec<Column>, visibility: Option<BooleanBuffer>) -> Self {
        debug_assert!(columns.iter().all(|c| c.len() == ops.len()));
        debug_assert!(visibility.as_ref().is_none_or(|v| v.len() == ops.len()));
        StreamChunk {
            ops,
            columns,
            visibility,
        }
    }

    /// A chunk of rows, each column typed by its first non-NULL value.
    pub fn from_rows(ops: Vec<Op>, rows: Vec<Row>) -> Self {
        let mut b = StreamChunkBuilder::new();
        for (op, row) in ops.into_iter().zip(rows) {
            b.push(op, row);
        }
        b.take()
    }

    /// A chunk of inserts.
    pub fn inserts(rows: Vec<Row>) -> Self {
        let ops = vec![Op::Insert; rows.len()];
        Self::from_rows(ops, rows)
    }

    /// The op of every row, visible or not.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Which rows are there (`None`: all of them).
    pub fn visibility(&self) -> Option<&BooleanBuffer> {
        self.visibility.as_ref()
    }

    pub fn into_parts(self) -> (Vec<Op>, Vec<Column>, Option<BooleanBuffer>) {
        (self.ops, self.columns, self.visibility)
    }

    /// Rows, visible or not.
    pub fn capacity(&self) -> usize {
        self.ops.len()
    }

    /// Visible rows.
    pub fn len(&self) -> usize {
        match &self.visibility {
            None => self.ops.len(),
            Some(v) => v.count_set_bits(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_visible(&self, i: usize) -> bool {
        self.visibility.as_ref().is_none_or(|v| v.value(i))
    }

    /// The positions of the visible rows.
    pub fn visible_indices(&self) -> VisibleRows<'_> {
        match &self.visibility {
            None => VisibleRows::All(0..self.ops.len()),
            Some(v) => VisibleRows::Set(v.set_indices()),
        }
    }

    /// Row `i`, its values copied out of the columns.
    pub fn row(&self, i: usize) -> Row {
        self.columns.iter().map(|c| c.datum(i)).collect()
    }

    /// The visible rows, each copied out of the columns: the way for an
    /// operator that works row by row.
    pub fn rows(&self) -> impl Iterator<Item = (Op, Row)> + '_ {
        self.visible_indices().map(|i| (self.ops[i], self.row(i)))
    }

    /// The same chunk with only its visible rows, and no visibility.
    pub fn compact(self) -> StreamChunk {
        let Some(vis) = self.visibility else {
            return self;
        };
        if vis.count_set_bits() == self.ops.len() {
            return StreamChunk::new(self.ops, self.columns, None);
        }
        let ops = vis.set_indices().map(|i| self.ops[i]).collect();
        let mask = BooleanArray::new(vis, None);
        let columns = self.columns.iter().map(|c| c.filter(&mask)).collect();
        StreamChunk::new(ops, columns, None)
    }

    /// The chunk with this visibility (anded with its own) and these ops.
    pub fn with_visibility(self, ops: Vec<Op>, visibility: BooleanBuffer) -> StreamChunk {
        let visibility = match self.visibility {
            Some(v) => &v & &visibility,
            None => visibility,
        };
        StreamChunk::new(ops, self.columns, Some(visibility))
    }

    /// The chunk with other columns of the same rows.
    pub fn with_columns(self, columns: Vec<Column>) -> StreamChunk {
        StreamChunk::new(self.ops, columns, self.visibility)
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
        let mut chunk = StreamChunkBuilder::with_types(types, 0);
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
        chunk.take()
    }

    /// The visible rows, one per line, as [`Self::from_pretty`] reads them.
    pub fn to_pretty(&self) -> String {
        let mut out = String::new();
        for (op, row) in self.rows() {
            out.push_str(op.symbol());
            for d in &row {
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

/// The positions of a chunk's visible rows.
pub enum VisibleRows<'a> {
    All(std::ops::Range<usize>),
    Set(arrow_buffer::bit_iterator::BitIndexIterator<'a>),
}

impl Iterator for VisibleRows<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            VisibleRows::All(r) => r.next(),
            VisibleRows::Set(s) => s.next(),
        }
    }
}

/// Chunks are equal when their visible rows and ops are.
impl PartialEq for StreamChunk {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.rows().eq(other.rows())
    }
}

/// Builds a chunk row by row.
pub struct StreamChunkBuilder {
    ops: Vec<Op>,
    types: Option<Vec<DataType>>,
    columns: Vec<ColumnBuilder>,
    capacity: usize,
}

impl Default for StreamChunkBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamChunkBuilder {
    /// A builder whose columns take the type of their first non-NULL value.
    pub fn new() -> Self {
        StreamChunkBuilder {
            ops: Vec::new(),
            types: None,
            columns: Vec::new(),
            capacity: 0,
        }
    }

    /// A builder of columns of these types.
    pub fn with_types(types: &[DataType], capacity: usize) -> Self {
        StreamChunkBuilder {
            ops: Vec::with_capacity(capacity),
            types: Some(types.to_vec()),
            columns: types
                .iter()
                .map(|t| ColumnBuilder::new(Some(*t), capacity))
                .collect(),
            capacity,
        }
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn start_row(&mut self, op: Op, width: usize) {
        if self.ops.is_empty() && self.types.is_none() && self.columns.len() != width {
            self.columns = (0..width)
                .map(|_| ColumnBuilder::new(None, self.capacity))
                .collect();
        }
        self.ops.push(op);
    }

    /// Append a row. A row of another width than the chunk's (a bug in the
    /// caller) is cut or padded with NULLs.
    pub fn push(&mut self, op: Op, row: Row) {
        self.push_ref(op, &row);
    }

    pub fn push_ref(&mut self, op: Op, row: &[Datum]) {
        self.start_row(op, row.len());
        debug_assert_eq!(row.len(), self.columns.len(), "row of another width");
        for (i, b) in self.columns.iter_mut().enumerate() {
            b.push(row.get(i).and_then(datum_ref));
        }
    }

    /// Append a row of borrowed values.
    pub fn push_refs<'a>(&mut self, op: Op, row: impl ExactSizeIterator<Item = DatumRef<'a>>) {
        self.start_row(op, row.len());
        let mut row = row;
        for b in self.columns.iter_mut() {
            b.push(row.next().flatten());
        }
    }

    /// The chunk so far; the builder starts over, with the same types.
    pub fn take(&mut self) -> StreamChunk {
        let n = self.ops.len();
        let ops = std::mem::take(&mut self.ops);
        let fresh = |ty: Option<DataType>| ColumnBuilder::new(ty, n.max(self.capacity));
        let columns: Vec<Column> = match &self.types {
            Some(types) => std::mem::replace(
                &mut self.columns,
                types.iter().map(|t| fresh(Some(*t))).collect(),
            ),
            None => std::mem::take(&mut self.columns),
        }
        .into_iter()
        .map(ColumnBuilder::finish)
        .collect();
        StreamChunk::new(ops, columns, None)
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
