//! The wire encoding of what flows between actors on different compute
//! nodes: chunks and barriers ([`Message`]). The remote exchange sees only
//! [`encode_message`] and [`decode_message`], so a new chunk format (the
//! columnar one) changes this module alone.
//!
//! # Format, version 2
//!
//! ```text
//! message = version: u8 (2) | kind: u8 | body
//! kind 1, chunk:   rows: u32 LE | ops: rows × u8 (0 +, 1 -, 2 U-, 3 U+) |
//!                  columns: u32 LE | column*   (the visible rows only)
//!   column = type: u8 (0 only NULLs, else 1 + the type's tag in the
//!            self-describing encoding of `common::encoding`) |
//!            nulls: u8 (0 none, 1 a validity bitmap follows) | bitmap |
//!            values
//!   bitmap = ceil(rows / 8) bytes, bit i (LSB first) set if row i is valid
//!   values = fixed width, little-endian: i16, i32, i64, f32, f64, date
//!            (i32 days), timestamp (i64 µs), numeric and interval (16 bytes,
//!            as `common::column` keeps them) | boolean: a bitmap |
//!            varchar: offsets: (rows + 1) × u32 LE from 0 | UTF-8 bytes
//! kind 2, barrier: the barrier as JSON (serde): few per second per node
//!                  pair, so its size does not matter and its fields can
//!                  grow without a format change
//! ```
//!
//! Decoding checks every length against the bytes present and returns an
//! error on anything malformed, never panics: the bytes come from the
//! network.

use bytes::Bytes;

use arrow_array::{Array, BooleanArray, FixedSizeBinaryArray, PrimitiveArray, StringArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer};

use super::message::{Barrier, Message};
use ebbflow_common::encoding::{decode_datum, encode_datum_exact_ref, tag_type, type_tag};
use ebbflow_common::{datum_ref, Column, ColumnBuilder, DataType, Op, ScalarRef, StreamChunk};

const VERSION: u8 = 2;
const KIND_CHUNK: u8 = 1;
const KIND_BARRIER: u8 = 2;

/// A message that could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("malformed exchange message: {0}")]
pub struct CodecError(String);

fn err(msg: impl Into<String>) -> CodecError {
    CodecError(msg.into())
}

/// Encodes one message for the network.
pub fn encode_message(message: &Message) -> Bytes {
    let mut buf = Vec::new();
    buf.push(VERSION);
    match message {
        Message::Chunk(chunk) => {
            buf.push(KIND_CHUNK);
            encode_chunk(&mut buf, chunk);
        }
        Message::Barrier(barrier) => {
            buf.push(KIND_BARRIER);
            // A barrier is plain data (numbers, maps, vectors): serializing
            // it cannot fail.
            serde_json::to_writer(&mut buf, barrier).expect("a barrier serializes");
        }
    }
    Bytes::from(buf)
}

/// Decodes a message written by [`encode_message`].
pub fn decode_message(data: &[u8]) -> Result<Message, CodecError> {
    match data {
        [VERSION, KIND_CHUNK, body @ ..] => decode_chunk(body).map(Message::Chunk),
        [VERSION, KIND_BARRIER, body @ ..] => serde_json::from_slice::<Barrier>(body)
            .map(Message::Barrier)
            .map_err(|e| err(format!("barrier: {e}"))),
        [VERSION, kind, ..] => Err(err(format!("unknown kind {kind}"))),
        [version, ..] if *version != VERSION => Err(err(format!("unknown version {version}"))),
        _ => Err(err("truncated header")),
    }
}

fn op_code(op: Op) -> u8 {
    match op {
        Op::Insert => 0,
        Op::Delete => 1,
        Op::UpdateDelete => 2,
        Op::UpdateInsert => 3,
    }
}

fn encode_chunk(buf: &mut Vec<u8>, chunk: &StreamChunk) {
    // Only the visible rows travel.
    let chunk = chunk.clone().compact();
    let rows = chunk.capacity();
    buf.extend_from_slice(&(rows as u32).to_le_bytes());
    buf.extend(chunk.ops().iter().map(|op| op_code(*op)));
    buf.extend_from_slice(&(chunk.columns().len() as u32).to_le_bytes());
    for column in chunk.columns() {
        encode_column(buf, column);
    }
}

fn type_code(ty: Option<DataType>) -> u8 {
    ty.map_or(0, |t| 1 + type_tag(t))
}

fn encode_bits(buf: &mut Vec<u8>, bits: &BooleanBuffer) {
    buf.extend_from_slice(bits.sliced().as_slice());
}

fn encode_column(buf: &mut Vec<u8>, column: &Column) {
    buf.push(type_code(column.data_type()));
    let array: &dyn Array = match column {
        Column::Null(_) => return,
        Column::Array(a) => {
            // Arrays are rare on the wire: each value in its exact encoding.
            for v in a.values.iter() {
                encode_datum_exact_ref(buf, v.as_ref().map(ScalarRef::Array));
            }
            return;
        }
        Column::Jsonb(values) => {
            for v in values.iter() {
                encode_datum_exact_ref(buf, v.as_ref().map(ScalarRef::Jsonb));
            }
            return;
        }
        Column::Bytea(_) => {
            for i in 0..column.len() {
                encode_datum_exact_ref(buf, column.get(i));
            }
            return;
        }
        Column::Int16(a) => a,
        Column::Int32(a) => a,
        Column::Int64(a) => a,
        Column::Float32(a) => a,
        Column::Float64(a) => a,
        Column::Decimal(a) | Column::Interval(a) | Column::Uuid(a) => a,
        Column::Varchar(a) => a,
        Column::Boolean(a) => a,
        Column::Date(a) => a,
        Column::Timestamp(a) | Column::Timestamptz(a) => a,
        Column::Time(a) => a,
    };
    match array.logical_nulls() {
        Some(nulls) if nulls.null_count() > 0 => {
            buf.push(1);
            encode_bits(buf, nulls.inner());
        }
        _ => buf.push(0),
    }
    fn le<T: Copy, const N: usize>(buf: &mut Vec<u8>, values: &[T], f: fn(T) -> [u8; N]) {
        buf.reserve(values.len() * N);
        for v in values {
            buf.extend_from_slice(&f(*v));
        }
    }
    match column {
        Column::Null(_) | Column::Array(_) | Column::Jsonb(_) | Column::Bytea(_) => {}
        Column::Int16(a) => le(buf, a.values(), i16::to_le_bytes),
        Column::Int32(a) => le(buf, a.values(), i32::to_le_bytes),
        Column::Int64(a) => le(buf, a.values(), i64::to_le_bytes),
        Column::Float32(a) => le(buf, a.values(), f32::to_le_bytes),
        Column::Float64(a) => le(buf, a.values(), f64::to_le_bytes),
        Column::Date(a) => le(buf, a.values(), i32::to_le_bytes),
        Column::Timestamp(a) | Column::Timestamptz(a) => le(buf, a.values(), i64::to_le_bytes),
        Column::Time(a) => le(buf, a.values(), i64::to_le_bytes),
        Column::Decimal(a) | Column::Interval(a) | Column::Uuid(a) => {
            for i in 0..a.len() {
                buf.extend_from_slice(a.value(i));
            }
        }
        Column::Boolean(a) => encode_bits(buf, a.values()),
        Column::Varchar(a) => {
            let offsets = a.value_offsets();
            let first = offsets.first().copied().unwrap_or(0);
            let last = offsets.last().copied().unwrap_or(0);
            for o in offsets {
                buf.extend_from_slice(&((o - first) as u32).to_le_bytes());
            }
            buf.extend_from_slice(&a.values()[first as usize..last as usize]);
        }
    }
}

fn read_u32(data: &mut &[u8]) -> Result<usize, CodecError> {
    let (head, rest) = data
        .split_first_chunk::<4>()
        .ok_or_else(|| err("truncated"))?;
    *data = rest;
    Ok(u32::from_le_bytes(*head) as usize)
}

fn take<'a>(data: &mut &'a [u8], n: usize) -> Result<&'a [u8], CodecError> {
    if n > data.len() {
        return Err(err(format!("{n} bytes wanted, {} left", data.len())));
    }
    let (head, rest) = data.split_at(n);
    *data = rest;
    Ok(head)
}

fn decode_chunk(mut data: &[u8]) -> Result<StreamChunk, CodecError> {
    let rows = read_u32(&mut data)?;
    let ops = take(&mut data, rows)?
        .iter()
        .map(|code| match code {
            0 => Ok(Op::Insert),
            1 => Ok(Op::Delete),
            2 => Ok(Op::UpdateDelete),
            3 => Ok(Op::UpdateInsert),
            _ => Err(err(format!("unknown op {code}"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let width = read_u32(&mut data)?;
    // Every column takes at least one byte.
    if width > data.len() {
        return Err(err(format!("{width} columns in {} bytes", data.len())));
    }
    let mut columns = Vec::with_capacity(width);
    for c in 0..width {
        columns.push(decode_column(&mut data, rows).map_err(|e| err(format!("column {c}: {e}")))?);
    }
    if !data.is_empty() {
        return Err(err(format!("{} bytes after the last column", data.len())));
    }
    Ok(StreamChunk::new(ops, columns, None))
}

fn decode_bits(data: &mut &[u8], rows: usize) -> Result<BooleanBuffer, CodecError> {
    let bytes = take(data, rows.div_ceil(8))?;
    Ok(BooleanBuffer::new(Buffer::from(bytes.to_vec()), 0, rows))
}

fn decode_column(data: &mut &[u8], rows: usize) -> Result<Column, CodecError> {
    let [code] = take(data, 1)? else {
        return Err(err("truncated"));
    };
    if *code == 0 {
        return Ok(Column::Null(rows));
    }
    let ty = tag_type(code - 1).map_err(|_| err(format!("unknown type {code}")))?;
    if ty.is_array() || ty == DataType::Jsonb || ty == DataType::Bytea {
        let mut b = ColumnBuilder::new(Some(ty), rows);
        for _ in 0..rows {
            let d = decode_datum(data, ty).map_err(|e| err(e.to_string()))?;
            b.push(datum_ref(&d));
        }
        return Ok(b.finish());
    }
    let nulls = match take(data, 1)? {
        [0] => None,
        [1] => Some(NullBuffer::new(decode_bits(data, rows)?)),
        other => return Err(err(format!("bad null marker {other:?}"))),
    };
    fn fixed<T, const N: usize>(
        data: &mut &[u8],
        rows: usize,
        f: fn([u8; N]) -> T,
    ) -> Result<Vec<T>, CodecError> {
        let bytes = take(data, rows * N)?;
        Ok(bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                f(a)
            })
            .collect())
    }
    let bad = |e: arrow_schema::ArrowError| err(e.to_string());
    Ok(match ty {
        DataType::Int16 => Column::Int16(
            PrimitiveArray::try_new(fixed(data, rows, i16::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Int32 => Column::Int32(
            PrimitiveArray::try_new(fixed(data, rows, i32::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Int64 => Column::Int64(
            PrimitiveArray::try_new(fixed(data, rows, i64::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Float32 => Column::Float32(
            PrimitiveArray::try_new(fixed(data, rows, f32::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Float64 => Column::Float64(
            PrimitiveArray::try_new(fixed(data, rows, f64::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Date => Column::Date(
            PrimitiveArray::try_new(fixed(data, rows, i32::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Timestamp => Column::Timestamp(
            PrimitiveArray::try_new(fixed(data, rows, i64::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Timestamptz => Column::Timestamptz(
            PrimitiveArray::try_new(fixed(data, rows, i64::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Time => Column::Time(
            PrimitiveArray::try_new(fixed(data, rows, i64::from_le_bytes)?.into(), nulls)
                .map_err(bad)?,
        ),
        DataType::Decimal | DataType::Interval | DataType::Uuid => {
            let bytes = take(data, rows * 16)?;
            let array = FixedSizeBinaryArray::try_new(16, Buffer::from(bytes.to_vec()), nulls)
                .map_err(bad)?;
            if ty == DataType::Decimal {
                // rust_decimal keeps its scale in byte 2 (at most 28).
                if (0..rows).any(|i| array.value(i)[2] > 28) {
                    return Err(err("numeric scale out of range"));
                }
                Column::Decimal(array)
            } else if ty == DataType::Uuid {
                Column::Uuid(array)
            } else {
                Column::Interval(array)
            }
        }
        DataType::Boolean => Column::Boolean(BooleanArray::new(decode_bits(data, rows)?, nulls)),
        DataType::Varchar => {
            let offsets = fixed(data, rows + 1, u32::from_le_bytes)?;
            let len = offsets.last().copied().unwrap_or(0) as usize;
            if offsets.first() != Some(&0)
                || offsets.windows(2).any(|w| w[0] > w[1])
                || len > i32::MAX as usize
            {
                return Err(err("bad string offsets"));
            }
            let bytes = take(data, len)?;
            let offsets: Vec<i32> = offsets.into_iter().map(|o| o as i32).collect();
            Column::Varchar(
                StringArray::try_new(
                    OffsetBuffer::new(offsets.into()),
                    Buffer::from(bytes.to_vec()),
                    nulls,
                )
                .map_err(bad)?,
            )
        }
        DataType::Array(_) | DataType::Jsonb | DataType::Bytea => {
            return Err(err("array column decoded as a scalar one"))
        }
    })
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::message::Epoch;
    use ebbflow_common::{Bitmap, ScalarValue};
    use ebbflow_plan::{Mutation, UpdateMutation};

    fn every_type_chunk() -> StreamChunk {
        use chrono::NaiveDate;
        use ebbflow_common::{Interval, F64};
        let date = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
        let row = |i: i64, x: f64, text: &str, b: bool, day: NaiveDate| {
            vec![
                Some(ScalarValue::Int16(i as i16)),
                Some(ScalarValue::Int32(i as i32)),
                Some(ScalarValue::Int64(i)),
                Some(ScalarValue::Float32(F64(x))),
                Some(ScalarValue::Float64(F64(-x))),
                Some(ScalarValue::decimal(
                    rust_decimal::Decimal::new(i, 3) / rust_decimal::Decimal::new(7, 0),
                )),
                Some(ScalarValue::varchar(text)),
                Some(ScalarValue::Boolean(b)),
                Some(ScalarValue::Date(day)),
                Some(ScalarValue::Timestamp(
                    day.and_hms_micro_opt(10, 11, 12, 123_456).expect("time"),
                )),
                Some(ScalarValue::Interval(Interval::new(i as i32 % 13, -3, i))),
                Some(ScalarValue::Timestamptz(
                    i % 1_000_000_000_000 * 1_000_003 - 7,
                )),
                Some(ScalarValue::Uuid(
                    (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                )),
                Some(ScalarValue::Jsonb(std::sync::Arc::new(
                    ebbflow_common::jsonb::Jsonb::parse(&format!(
                        "{{\"k\": [{}, 1.50]}}",
                        i % 1000
                    ))
                    .expect("json"),
                ))),
                Some(ScalarValue::Bytea(
                    i.to_le_bytes()[..(i as usize % 9)].into(),
                )),
                Some(ScalarValue::Time(i.rem_euclid(86_400_000_001))),
                Some(ScalarValue::array(
                    ebbflow_common::ElemType::Varchar,
                    vec![Some(ScalarValue::varchar(text)), None],
                )),
            ]
        };
        StreamChunk::from_rows(
            vec![Op::Insert, Op::Delete, Op::UpdateDelete, Op::UpdateInsert],
            vec![
                row(1, 1.5, "abcdefghijklmnop", true, date(2024, 2, 29)),
                vec![None; 17],
                row(i64::MIN / 2, f64::NAN, "é", false, date(1, 1, 1)),
                row(i64::MAX / 2, f64::INFINITY, "", true, date(2262, 4, 11)),
            ],
        )
    }

    fn round_trip(message: &Message) -> Message {
        decode_message(&encode_message(message)).expect("decodes")
    }

    #[test]
    fn chunks_of_every_type_round_trip() {
        let chunk = every_type_chunk();
        assert_eq!(chunk.columns().len(), 17);
        match round_trip(&Message::Chunk(chunk.clone())) {
            Message::Chunk(back) => assert_eq!(back, chunk),
            other => panic!("{other:?}"),
        }
        let empty = StreamChunk::default();
        match round_trip(&Message::Chunk(empty.clone())) {
            Message::Chunk(back) => assert_eq!(back, empty),
            other => panic!("{other:?}"),
        }
        // Columns of only NULLs (no type), and rows that are not visible.
        let nulls = StreamChunk::inserts(vec![vec![None, Some(ScalarValue::Int32(1))]; 3]);
        let ops = nulls.ops().to_vec();
        let hidden = nulls.with_visibility(ops, BooleanBuffer::from(vec![true, false, true]));
        match round_trip(&Message::Chunk(hidden.clone())) {
            Message::Chunk(back) => {
                assert_eq!(back.capacity(), 2);
                assert_eq!(back, hidden);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn barriers_with_mutations_round_trip() {
        let epoch = Epoch { curr: 7, prev: 6 };
        let mut update = UpdateMutation::default();
        update.vnode_bitmaps.insert(3, Bitmap::full());
        update.dropped_actors.insert(9);
        update.added_actors.insert(11);
        for barrier in [
            Barrier::new(epoch),
            Barrier::with_mutation(epoch, Mutation::Pause),
            Barrier::with_mutation(
                epoch,
                Mutation::Stop {
                    actors: HashSet::from([1, 2]),
                },
            ),
            Barrier::with_mutation(
                epoch,
                Mutation::Add {
                    dispatchers: HashMap::new(),
                    added_actors: HashSet::from([5]),
                },
            ),
            Barrier::with_mutation(epoch, Mutation::Update(update)),
        ] {
            let Message::Barrier(back) = round_trip(&Message::Barrier(barrier.clone())) else {
                panic!("not a barrier");
            };
            assert_eq!(back.epoch, barrier.epoch);
            // Sets print in any order: compare what the runtime asks.
            let kind = |b: &Barrier| {
                format!("{:?}", b.mutation.as_deref())
                    .split([' ', '(', '{'])
                    .next()
                    .map(str::to_owned)
            };
            assert_eq!(kind(&back), kind(&barrier));
            for actor in [1, 2, 5, 9, 11] {
                assert_eq!(back.stops(actor), barrier.stops(actor));
            }
            assert_eq!(back.new_bitmap(3), barrier.new_bitmap(3));
            assert_eq!(back.is_pause(), barrier.is_pause());
        }
    }

    #[test]
    fn malformed_input_is_an_error_never_a_panic() {
        let good = encode_message(&Message::Chunk(every_type_chunk()));
        // Every truncation.
        for cut in 0..good.len() {
            assert!(decode_message(&good[..cut]).is_err(), "cut at {cut}");
        }
        // Trailing garbage, bad headers.
        let mut long = good.to_vec();
        long.push(0);
        assert!(decode_message(&long).is_err());
        assert!(decode_message(&[2, 1]).is_err());
        assert!(decode_message(&[1, 9]).is_err());
        assert!(decode_message(&[1, 2, b'{']).is_err());
        // Random mutations and random bytes.
        let mut rng = SmallRng::seed_from_u64(1);
        for round in 0..20_000 {
            let mut bad = good.to_vec();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..bad.len());
                bad[i] = rng.gen();
            }
            let _ = decode_message(&bad);
            let junk: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
            let _ = decode_message(&junk);
            if round % 2 == 0 {
                let mut claims = vec![1, 1];
                claims.extend_from_slice(&u32::MAX.to_le_bytes());
                assert!(decode_message(&claims).is_err());
            }
        }
    }
}
