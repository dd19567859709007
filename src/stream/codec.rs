//! The wire encoding of what flows between actors on different compute
//! nodes: chunks and barriers ([`Message`]). The remote exchange sees only
//! [`encode_message`] and [`decode_message`], so a new chunk format (the
//! columnar one) changes this module alone.
//!
//! # Format, version 1
//!
//! ```text
//! message = version: u8 (1) | kind: u8 | body
//! kind 1, chunk:   rows: u32 LE | ops: rows × u8 (0 +, 1 -, 2 U-, 3 U+) |
//!                  row*: columns: u32 LE | datum*
//!                  datum = 0xff (NULL) | type tag: u8 | value body
//!                  (the self-describing encoding of `common::encoding`)
//! kind 2, barrier: the barrier as JSON (serde): few per second per node
//!                  pair, so its size does not matter and its fields can
//!                  grow without a format change
//! ```
//!
//! Decoding checks every length against the bytes present and returns an
//! error on anything malformed, never panics: the bytes come from the
//! network.

use bytes::Bytes;

use super::message::{Barrier, Message};
use crate::common::encoding::{decode_datum_tagged, encode_datum_tagged};
use crate::common::{Op, StreamChunk};

const VERSION: u8 = 1;
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
    buf.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
    buf.extend(chunk.ops.iter().map(|op| op_code(*op)));
    for row in &chunk.rows {
        buf.extend_from_slice(&(row.len() as u32).to_le_bytes());
        for datum in row {
            encode_datum_tagged(buf, datum);
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

fn decode_chunk(mut data: &[u8]) -> Result<StreamChunk, CodecError> {
    let rows = read_u32(&mut data)?;
    if rows > data.len() {
        return Err(err(format!("{rows} rows in {} bytes", data.len())));
    }
    let (ops, mut data) = data.split_at(rows);
    let ops = ops
        .iter()
        .map(|code| match code {
            0 => Ok(Op::Insert),
            1 => Ok(Op::Delete),
            2 => Ok(Op::UpdateDelete),
            3 => Ok(Op::UpdateInsert),
            _ => Err(err(format!("unknown op {code}"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::with_capacity(rows);
    for i in 0..rows {
        let columns = read_u32(&mut data)?;
        // Every datum takes at least one byte.
        if columns > data.len() {
            return Err(err(format!(
                "row {i}: {columns} columns in {} bytes",
                data.len()
            )));
        }
        let mut row = Vec::with_capacity(columns);
        for _ in 0..columns {
            row.push(decode_datum_tagged(&mut data).map_err(|e| err(format!("row {i}: {e}")))?);
        }
        out.push(row);
    }
    if !data.is_empty() {
        return Err(err(format!("{} bytes after the last row", data.len())));
    }
    Ok(StreamChunk::new(ops, out))
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::common::{Bitmap, ScalarValue};
    use crate::stream::message::{Epoch, Mutation, UpdateMutation};

    fn every_type_chunk() -> StreamChunk {
        use crate::common::{Interval, F64};
        use chrono::NaiveDate;
        let date = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
        let row = |i: i64, x: f64, text: &str, b: bool, day: NaiveDate| {
            vec![
                Some(ScalarValue::Int16(i as i16)),
                Some(ScalarValue::Int32(i as i32)),
                Some(ScalarValue::Int64(i)),
                Some(ScalarValue::Float32(F64(x))),
                Some(ScalarValue::Float64(F64(-x))),
                Some(ScalarValue::Decimal(
                    rust_decimal::Decimal::new(i, 3) / rust_decimal::Decimal::new(7, 0),
                )),
                Some(ScalarValue::varchar(text)),
                Some(ScalarValue::Boolean(b)),
                Some(ScalarValue::Date(day)),
                Some(ScalarValue::Timestamp(
                    day.and_hms_micro_opt(10, 11, 12, 123_456).expect("time"),
                )),
                Some(ScalarValue::Interval(Interval::new(i as i32 % 13, -3, i))),
            ]
        };
        StreamChunk::new(
            vec![Op::Insert, Op::Delete, Op::UpdateDelete, Op::UpdateInsert],
            vec![
                row(1, 1.5, "abcdefghijklmnop", true, date(2024, 2, 29)),
                vec![None; 11],
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
        assert_eq!(chunk.rows[0].len(), 11);
        match round_trip(&Message::Chunk(chunk.clone())) {
            Message::Chunk(back) => assert_eq!(back, chunk),
            other => panic!("{other:?}"),
        }
        let empty = StreamChunk::default();
        match round_trip(&Message::Chunk(empty.clone())) {
            Message::Chunk(back) => assert_eq!(back, empty),
            other => panic!("{other:?}"),
        }
        // Rows of different widths (a chunk does not carry a schema).
        let ragged = StreamChunk::inserts(vec![vec![], vec![Some(ScalarValue::Int32(1)), None]]);
        match round_trip(&Message::Chunk(ragged.clone())) {
            Message::Chunk(back) => assert_eq!(back, ragged),
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
