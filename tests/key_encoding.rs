//! Key encodings compared (a benchmark, run by `ci/bench-keys`; ignored by
//! `cargo test`, and it asserts only that the three orders agree).
//!
//! State keys and the vnode hash's input are memcomparable encodings of a
//! row's key columns. Issue 12 asks for them to come from a library unless
//! measurements say otherwise; this measures ebbflow's encoder
//! (`common::encoding`, from a chunk's columns) against the `memcomparable`
//! crate (serde, per row) and `arrow-row`'s `RowConverter` (a batch of
//! columns at once), on keys of `(bigint, varchar)` and `(bigint)`: the
//! time per key, the bytes per key, and that all three order keys alike.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Int64Array, StringArray};
use arrow_row::{RowConverter, SortField};
use ebbflow::common::encoding::encode_datum_ref;
use ebbflow::common::{Column, StreamChunk};
use serde::Serializer as _;

const ROWS: usize = 1 << 20;
const ROUNDS: usize = 5;

fn keys() -> (Vec<i64>, Vec<String>) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let ints = (0..ROWS)
        .map(|_| (next() % 1_000_000) as i64 - 500_000)
        .collect();
    let texts = (0..ROWS)
        .map(|_| {
            let n = 4 + next() % 20;
            (0..n)
                .map(|_| (b'a' + (next() % 26) as u8) as char)
                .collect()
        })
        .collect();
    (ints, texts)
}

/// Best of `ROUNDS` runs of `f`, in ns per key, and its output.
fn time<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut out = None;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_nanos() as f64 / ROWS as f64);
        out = Some(r);
    }
    (best, out.expect("ran"))
}

fn ebbflow_keys(columns: &[Column]) -> Vec<Vec<u8>> {
    (0..ROWS)
        .map(|i| {
            let mut k = Vec::with_capacity(32);
            for c in columns {
                encode_datum_ref(&mut k, c.get(i));
            }
            k
        })
        .collect()
}

fn memcomparable_keys(ints: &[i64], texts: Option<&[String]>) -> Vec<Vec<u8>> {
    (0..ROWS)
        .map(|i| {
            let mut s = memcomparable::Serializer::new(Vec::with_capacity(32));
            // Nullable columns, as SQL keys are: Some(value).
            s.serialize_some(&ints[i]).expect("serializes");
            if let Some(t) = texts {
                s.serialize_some(t[i].as_str()).expect("serializes");
            }
            s.into_inner()
        })
        .collect()
}

fn arrow_row_keys(arrays: &[ArrayRef]) -> Vec<Vec<u8>> {
    let fields = arrays
        .iter()
        .map(|a| SortField::new(a.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields).expect("converter");
    let rows = converter.convert_columns(arrays).expect("converts");
    (0..ROWS).map(|i| rows.row(i).as_ref().to_vec()).collect()
}

fn sorted_by(keys: &[Vec<u8>]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..ROWS).collect();
    idx.sort_by(|&a, &b| keys[a].cmp(&keys[b]).then(a.cmp(&b)));
    idx
}

#[test]
#[ignore = "a benchmark: ci/bench-keys runs it"]
fn key_encodings() {
    let (ints, texts) = keys();
    let int_array = Int64Array::from(ints.clone());
    let text_array = StringArray::from(texts.clone());
    let chunk = StreamChunk::inserts(
        ints.iter()
            .zip(&texts)
            .map(|(i, t)| {
                vec![
                    Some(ebbflow::common::ScalarValue::Int64(*i)),
                    Some(ebbflow::common::ScalarValue::varchar(t.as_str())),
                ]
            })
            .collect(),
    );
    println!("{ROWS} keys, best of {ROUNDS} runs");
    println!(
        "{:<22} {:>14} {:>14} {:>14}",
        "key", "encoder", "ns per key", "bytes per key"
    );
    for (name, width) in [("(bigint, varchar)", 2), ("(bigint)", 1)] {
        let columns = &chunk.columns()[..width];
        let arrays: Vec<ArrayRef> = [
            Arc::new(int_array.clone()) as ArrayRef,
            Arc::new(text_array.clone()),
        ][..width]
            .to_vec();
        let texts = (width == 2).then_some(texts.as_slice());
        let (t_e, k_e) = time(|| ebbflow_keys(columns));
        let (t_m, k_m) = time(|| memcomparable_keys(&ints, texts));
        let (t_a, k_a) = time(|| arrow_row_keys(&arrays));
        for (encoder, t, k) in [
            ("ebbflow", t_e, &k_e),
            ("memcomparable", t_m, &k_m),
            ("arrow-row", t_a, &k_a),
        ] {
            let bytes = k.iter().map(Vec::len).sum::<usize>() as f64 / ROWS as f64;
            println!("{name:<22} {encoder:>14} {t:>14.1} {bytes:>14.1}");
        }
        println!(
            "{name:<22} ratio memcomparable/ebbflow {:.2}, arrow-row/ebbflow {:.2}",
            t_m / t_e,
            t_a / t_e
        );
        let order = sorted_by(&k_e);
        assert_eq!(order, sorted_by(&k_m), "memcomparable orders keys alike");
        assert_eq!(order, sorted_by(&k_a), "arrow-row orders keys alike");
    }
}
