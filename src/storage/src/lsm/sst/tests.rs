//! Format tests: round trips, lookups, filter, ranges, corruption.

use super::codec::{get_varint, put_varint};
use super::*;
use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;

pub(super) type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// A key shaped like ours: table_id (4 BE) | vnode (2 BE) | pk.
pub(super) fn random_key(rng: &mut SmallRng) -> Vec<u8> {
    let mut key = Vec::new();
    key.extend_from_slice(&rng.gen_range(1u32..4).to_be_bytes());
    key.extend_from_slice(&rng.gen_range(0u16..8).to_be_bytes());
    let pk_len = match rng.gen_range(0..20) {
        0 => 0,
        1 => rng.gen_range(200..3000), // long keys
        _ => rng.gen_range(1..24),
    };
    key.extend((0..pk_len).map(|_| rng.gen::<u8>()));
    key
}

pub(super) fn random_value(rng: &mut SmallRng) -> Option<Vec<u8>> {
    match rng.gen_range(0..10) {
        0 => None, // tombstone
        1 => Some(Vec::new()),
        2 => Some((0..rng.gen_range(100..5000)).map(|_| rng.gen()).collect()),
        _ => Some((0..rng.gen_range(1..40)).map(|_| rng.gen()).collect()),
    }
}

pub(super) fn random_model(rng: &mut SmallRng, n: usize) -> Model {
    (0..n)
        .map(|_| (random_key(rng), random_value(rng)))
        .collect()
}

pub(super) fn build(model: &Model, options: SstOptions) -> (Bytes, SstMeta) {
    let mut b = SstBuilder::new(options);
    for (k, v) in model {
        b.add(k, v.as_deref());
    }
    b.finish()
}

/// Tiny uncompressed blocks: the format tests below work on the blocks'
/// bytes; `lz4_*` tests cover compression.
pub(super) fn tiny() -> SstOptions {
    SstOptions {
        block_size: 64,
        bloom: true,
        compression: Compression::None,
    }
}

pub(super) fn collect(iter: impl Iterator<Item = EntryResult>) -> Model {
    iter.map(|e| {
        let (k, v) = e.expect("entry");
        (k.to_vec(), v.map(|v| v.to_vec()))
    })
    .collect()
}

fn as_vec(iter: impl Iterator<Item = EntryResult>) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    iter.map(|e| e.map(|(k, v)| (k.to_vec(), v.map(|v| v.to_vec()))))
        .collect::<Result<_, _>>()
        .expect("iteration")
}

fn check_round_trip(model: &Model, options: SstOptions) -> SstReader {
    let (file, meta) = build(model, options);
    let reader = SstReader::open(file.clone()).expect("open");
    assert_eq!(meta.size, file.len() as u64);
    assert_eq!(reader.meta(), meta);
    assert_eq!(meta.key_count, model.len() as u64);
    let tombstones = model.values().filter(|v| v.is_none()).count() as u64;
    assert_eq!(meta.tombstone_count, tombstones);
    assert_eq!(&meta.first_key[..], model.keys().next().unwrap().as_slice());
    assert_eq!(&meta.last_key[..], model.keys().last().unwrap().as_slice());
    // The meta section alone decodes to the same index.
    let index = SstIndex::decode(file.slice(meta.meta_offset as usize..)).expect("index");
    assert_eq!(index.to_meta(), meta);
    assert_eq!(index.block_count(), meta.block_count as usize);
    // Iteration is exactly the model, in order, with ordering preserved.
    let entries = as_vec(reader.iter());
    assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(entries.into_iter().collect::<Model>(), *model);
    for (k, v) in model {
        let got = reader.get(k).expect("get");
        assert_eq!(
            got.map(|v| v.map(|v| v.to_vec())),
            Some(v.clone()),
            "key {k:?}"
        );
    }
    reader
}

#[test]
fn varint_round_trip_and_rejects_bad_encodings() {
    for v in [
        0u32,
        1,
        127,
        128,
        300,
        16383,
        16384,
        1 << 21,
        1 << 28,
        u32::MAX,
    ] {
        let mut buf = Vec::new();
        put_varint(&mut buf, v);
        assert_eq!(buf.len(), codec::varint_len(v));
        let mut pos = 0;
        assert_eq!(get_varint(&buf, &mut pos), Some(v));
        assert_eq!(pos, buf.len());
        let mut pos = 0;
        assert_eq!(get_varint(&buf[..buf.len() - 1], &mut pos), None);
    }
    let mut pos = 0;
    assert_eq!(get_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f], &mut pos), None);
    assert_eq!(
        get_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut pos),
        None
    );
}

#[test]
fn key_hash_is_xxh64_seed_0() {
    // Reference values from the xxHash spec / xxhash-rust, seed 0. These are
    // persisted in every filter: they must never change.
    assert_eq!(key_hash(b""), 0xef46db3751d8e999);
    assert_eq!(key_hash(b"a"), 0xd24ec4f1a98c6e5b);
    assert_eq!(key_hash(b"abc"), 0x44bc2cf5ad770999);
    let pattern = |n: usize| -> Vec<u8> { (0..n).map(|i| ((i * 7 + 3) % 251) as u8).collect() };
    for (n, want) in [
        (4, 0x9bb64b7d66ee9fdau64),
        (7, 0x9a7b149959ce60d8),
        (8, 0xdab99d95c6f90092),
        (31, 0xa2aa5f33cc4a6119),
        (32, 0x23c3c17ef790fd97),
        (33, 0x50a7cfc7ba588784),
        (64, 0x2cd990a1beed6894),
        (100, 0x778e26df8290f456),
        (1000, 0x021f7a7424085ea4),
    ] {
        assert_eq!(key_hash(&pattern(n)), want, "length {n}");
    }
}

#[test]
fn round_trip_random_many_tiny_blocks() {
    let mut rng = SmallRng::seed_from_u64(1);
    for n in [1, 2, 3, 10, 500, 3000] {
        let model = random_model(&mut rng, n);
        let reader = check_round_trip(&model, tiny());
        if n >= 500 {
            assert!(reader.index().block_count() > 100);
        }
        check_round_trip(&model, SstOptions::default());
        check_round_trip(
            &model,
            SstOptions {
                bloom: false,
                ..tiny()
            },
        );
        check_round_trip(
            &model,
            SstOptions {
                compression: Compression::Lz4,
                ..tiny()
            },
        );
    }
}

#[test]
fn single_entry_and_empty_files() {
    for value in [None, Some(Vec::new()), Some(b"v".to_vec())] {
        let model = Model::from([(b"only".to_vec(), value)]);
        let reader = check_round_trip(&model, tiny());
        assert_eq!(reader.index().block_count(), 1);
        assert!(!reader.index().has_filter(), "one key needs no filter");
        assert_eq!(reader.get(b"other").unwrap(), None);
    }
    let builder = SstBuilder::new(tiny());
    assert!(builder.is_empty());
    let (file, meta) = builder.finish();
    assert_eq!((meta.key_count, meta.block_count), (0, 0));
    let reader = SstReader::open(file).unwrap();
    assert_eq!(reader.iter().count(), 0);
    assert_eq!(reader.get(b"x").unwrap(), None);
    assert_eq!(reader.index().first_key(), b"");
    assert_eq!(reader.index().find_block(b""), None);
}

#[test]
fn point_gets_of_absent_keys() {
    let mut rng = SmallRng::seed_from_u64(2);
    let model = random_model(&mut rng, 2000);
    for options in [tiny(), SstOptions::default()] {
        let (file, _) = build(&model, options);
        let reader = SstReader::open(file).unwrap();
        for _ in 0..5000 {
            let mut probe = random_key(&mut rng);
            if rng.gen_bool(0.3) {
                // Just after an existing key: inside a block's range.
                probe = model
                    .keys()
                    .nth(rng.gen_range(0..model.len()))
                    .unwrap()
                    .clone();
                probe.push(0);
            }
            let want = model.get(&probe).cloned();
            let got = reader.get(&probe).unwrap().map(|v| v.map(|v| v.to_vec()));
            assert_eq!(got, want);
        }
        for probe in [&b""[..], b"\x00", b"\xff\xff\xff\xff\xff\xff\xff"] {
            assert_eq!(reader.get(probe).unwrap(), None);
        }
    }
}

#[test]
fn filter_has_no_false_negatives_and_few_false_positives() {
    let mut builder = SstBuilder::new(SstOptions::default());
    let key = |i: u64| {
        let mut k = 7u32.to_be_bytes().to_vec();
        k.extend_from_slice(&((i % 256) as u16).to_be_bytes());
        k.extend_from_slice(&(i * 2).to_be_bytes()); // even pks present
        k
    };
    let n = 100_000u64;
    let mut keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        builder.add(k, (i % 3 != 0).then_some(&b"v"[..]));
    }
    let (file, meta) = builder.finish();
    let index = SstIndex::decode(file.slice(meta.meta_offset as usize..)).unwrap();
    assert!(index.has_filter());
    assert!(keys.iter().all(|k| index.may_contain(k)), "false negative");
    let mut false_positives = 0;
    for i in 0..n {
        let mut k = key(i);
        let last = k.len() - 1;
        k[last] |= 1; // odd pk: never inserted
        false_positives += usize::from(index.may_contain(&k));
    }
    let rate = false_positives as f64 / n as f64;
    eprintln!(
        "filter: {false_positives} false positives in {n} probes ({:.4}%), {:.1} bits/key",
        rate * 100.0,
        (index.approx_memory() as f64 * 8.0) / n as f64
    );
    assert!(rate < 0.001, "false positive rate {rate}");
}

#[test]
fn range_iteration_matches_model_for_every_bound_kind() {
    let mut rng = SmallRng::seed_from_u64(3);
    let model = random_model(&mut rng, 500);
    let (file, _) = build(&model, tiny());
    let reader = SstReader::open(file).unwrap();
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let pick = |rng: &mut SmallRng| -> Vec<u8> {
        match rng.gen_range(0..3) {
            0 => keys[rng.gen_range(0..keys.len())].clone(),
            1 => random_key(rng),
            _ => {
                let mut k = keys[rng.gen_range(0..keys.len())].clone();
                k.push(rng.gen());
                k
            }
        }
    };
    let bound = |kind: u8, k: &[u8]| -> Bound<Vec<u8>> {
        match kind {
            0 => Bound::Unbounded,
            1 => Bound::Included(k.to_vec()),
            _ => Bound::Excluded(k.to_vec()),
        }
    };
    for _ in 0..150 {
        let (a, b) = (pick(&mut rng), pick(&mut rng));
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        for sk in 0..3 {
            for ek in 0..3 {
                let (start, end) = (bound(sk, &lo), bound(ek, &hi));
                if lo == hi && sk == 2 && ek == 2 {
                    continue; // BTreeMap::range panics on (Excluded(x), Excluded(x))
                }
                let want: Model = model
                    .range::<Vec<u8>, _>((start.clone(), end.clone()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let got = as_vec(reader.iter_range(bound_ref(&start), bound_ref(&end)));
                assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
                assert_eq!(got.into_iter().collect::<Model>(), want);
            }
        }
    }
    // Empty and inverted ranges.
    let k = keys[10].as_slice();
    assert_eq!(
        reader
            .iter_range(Bound::Excluded(k), Bound::Excluded(k))
            .count(),
        0
    );
    assert_eq!(
        reader
            .iter_range(Bound::Included(k), Bound::Excluded(k))
            .count(),
        0
    );
    let inverted = reader.iter_range(Bound::Included(keys[20]), Bound::Included(keys[10]));
    assert_eq!(inverted.count(), 0);
}

fn bound_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(|k| &k[..])
}

#[test]
fn index_block_search_agrees_with_brute_force() {
    let mut rng = SmallRng::seed_from_u64(4);
    let model = random_model(&mut rng, 600);
    let (file, _) = build(&model, tiny());
    let reader = SstReader::open(file).unwrap();
    let index = reader.index();
    let n = index.block_count();
    for _ in 0..3000 {
        let k = random_key(&mut rng);
        let brute = (0..n)
            .find(|&i| index.block_first_key(i) <= &k[..] && &k[..] <= index.block_last_key(i));
        assert_eq!(index.find_block(&k), brute);
        if let Some(i) = brute {
            let block = reader.block(i).unwrap();
            let pos = block.seek(&k);
            assert!(pos == block.len() || block.key_at(pos) >= &k[..]);
            assert!(pos == 0 || block.key_at(pos - 1) < &k[..]);
            assert_eq!(
                block.get_ref(&k).map(|v| v.map(<[u8]>::to_vec)),
                model.get(&k).cloned()
            );
        }
        let r = index.blocks_overlapping(Bound::Included(&k), Bound::Unbounded);
        assert_eq!(
            r.start,
            (0..n)
                .find(|&i| index.block_last_key(i) >= &k[..])
                .unwrap_or(n)
        );
    }
    // Every key lives in exactly the block find_block names.
    for (k, v) in &model {
        let i = index.find_block(k).unwrap();
        let block = reader.block(i).unwrap();
        assert_eq!(block.get(k).map(|v| v.map(|v| v.to_vec())), Some(v.clone()));
        let (key, value) = block.entry(block.seek(k));
        assert_eq!((&key[..], value.map(|v| v.to_vec())), (&k[..], v.clone()));
        assert!(block.approx_memory() >= block.iter().map(|(k, _)| k.len()).sum::<usize>());
    }
    assert!(index.approx_memory() > 0);
}

/// Asserts that reading `file` fully (open, iterate, get every key) reports
/// an error somewhere; never panics.
fn read_everything(file: Bytes, keys: &[Vec<u8>]) -> Result<(), SstError> {
    let reader = SstReader::open(file)?;
    for entry in reader.iter() {
        entry?;
    }
    for k in keys {
        reader.get(k)?;
    }
    Ok(())
}

#[test]
fn every_flipped_byte_is_detected() {
    let mut rng = SmallRng::seed_from_u64(5);
    let model: Model = (0..40)
        .map(|i| (format!("key{i:03}").into_bytes(), random_value(&mut rng)))
        .map(|(k, v)| {
            (
                k,
                v.map(|mut v| {
                    v.truncate(8);
                    v
                }),
            )
        })
        .collect();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    let (file, meta) = build(&model, tiny());
    assert!(read_everything(file.clone(), &keys).is_ok());
    for pos in 0..file.len() {
        let mut bad = file.to_vec();
        bad[pos] ^= 1 << rng.gen_range(0..8);
        let err = read_everything(Bytes::from(bad), &keys).expect_err("undetected flip");
        if (pos as u64) < meta.meta_offset {
            let msg = err.to_string();
            assert!(msg.contains("block") && msg.contains("checksum"), "{msg}");
        }
    }
}

#[test]
fn truncated_meta_and_files_are_errors() {
    let mut rng = SmallRng::seed_from_u64(6);
    let model = random_model(&mut rng, 300);
    let (file, meta) = build(&model, tiny());
    let meta_section = file.slice(meta.meta_offset as usize..);
    let len = meta_section.len();
    // Every cut near the footer, a sample of the rest.
    let cuts = (0..len).step_by(13).chain(len.saturating_sub(200)..len);
    for cut in cuts {
        assert!(SstIndex::decode(meta_section.slice(..cut)).is_err());
        assert!(SstIndex::decode(meta_section.slice(cut + 1..)).is_err());
    }
    for cut in (0..file.len()).step_by(7) {
        assert!(SstReader::open(file.slice(..cut)).is_err());
    }
    let reader = SstReader::open(file.clone()).unwrap();
    let (off, len) = reader.index().block_handle(3);
    let block = file.slice(off as usize..(off + len as u64) as usize);
    for cut in 0..block.len() {
        assert!(Block::decode(block.slice(..cut)).is_err());
    }
    let err = SstIndex::decode(meta_section.slice(..meta_section.len() - 1)).unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");
}

#[test]
fn random_garbage_is_an_error() {
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..5000 {
        let len = rng.gen_range(0..300);
        let mut junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if len >= FOOTER_LEN && rng.gen_bool(0.5) {
            // Get past the magic and version checks.
            junk[len - 8..].copy_from_slice(&MAGIC);
            junk[len - 16..len - 12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        }
        let junk = Bytes::from(junk);
        assert!(SstReader::open(junk.clone()).is_err());
        assert!(SstIndex::decode(junk.clone()).is_err());
        assert!(Block::decode(junk).is_err());
    }
}

/// Recomputes the trailing crc of a block or the footer crc of a meta section.
fn fix_crc(buf: &mut [u8], crc_pos: usize) {
    let crc = crc32fast::hash(&buf[..crc_pos]);
    buf[crc_pos..crc_pos + 4].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn garbage_with_valid_checksums_never_panics() {
    // Checksums catch accidents; structure validation must catch the rest
    // (e.g. bugs in a writer). Mutate, re-seal and exercise everything.
    let mut rng = SmallRng::seed_from_u64(8);
    let model: Model = (0..100u32)
        .map(|i| (i.to_be_bytes().to_vec(), random_value(&mut rng)))
        .collect();
    let (file, meta) = build(&model, tiny());
    let reader = SstReader::open(file.clone()).unwrap();
    let meta_section = file.slice(meta.meta_offset as usize..).to_vec();
    let (off, len) = reader.index().block_handle(1);
    let block = file[off as usize..(off + len as u64) as usize].to_vec();
    let probes: Vec<Vec<u8>> = (0..20).map(|_| random_key(&mut rng)).collect();
    let (mut index_ok, mut block_ok) = (0, 0);
    for round in 0..20_000 {
        let mut m = meta_section.clone();
        let mut b = block.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..m.len() - 12); // keep crc and magic
            m[i] = if round % 2 == 0 { rng.gen() } else { m[i] ^ 1 };
            let j = rng.gen_range(0..b.len() - 4);
            b[j] = if round % 2 == 0 { rng.gen() } else { b[j] ^ 1 };
        }
        let crc_pos = m.len() - 12;
        fix_crc(&mut m, crc_pos);
        let crc_pos = b.len() - 4;
        fix_crc(&mut b, crc_pos);
        if let Ok(index) = SstIndex::decode(Bytes::from(m)) {
            index_ok += 1;
            for p in &probes {
                index.may_contain(p);
                index.find_block(p);
                index.blocks_overlapping(Bound::Excluded(p), Bound::Included(p));
            }
            index.to_meta();
        }
        if let Ok(block) = Block::decode(Bytes::from(b)) {
            block_ok += 1;
            for p in &probes {
                block.get(p);
            }
            assert!(block.iter().count() == block.len());
        }
    }
    eprintln!("accepted after mutation: {index_ok} meta sections, {block_ok} blocks");
}

fn lz4(block_size: usize) -> SstOptions {
    SstOptions {
        block_size,
        bloom: true,
        compression: Compression::Lz4,
    }
}

#[test]
fn lz4_files_are_smaller_and_read_back() {
    // Keys like the store's: table | vnode | pk, values a few small columns.
    let model: Model = (0..20_000u32)
        .map(|i| {
            let mut k = vec![0, 0, 0, 7, (i % 256) as u8, 0];
            k.extend_from_slice(&(i / 256).to_be_bytes());
            (k, Some(format!("row {i} value {}", i % 100).into_bytes()))
        })
        .collect();
    let plain = build(
        &model,
        SstOptions {
            compression: Compression::None,
            ..SstOptions::default()
        },
    )
    .0;
    check_round_trip(&model, lz4(16 * 1024));
    let (packed, meta) = build(&model, SstOptions::default());
    assert_eq!(meta.size, packed.len() as u64);
    assert!(
        packed.len() * 3 < plain.len() * 2,
        "lz4 {} bytes vs plain {}",
        packed.len(),
        plain.len()
    );
}

#[test]
fn lz4_flipped_bytes_never_read_wrong_data() {
    // A flip inside compressed bytes may decompress to the same block (a
    // match offset pointing at an equal run): the block's crc, computed
    // before compression, makes that the only way to read without error.
    let mut rng = SmallRng::seed_from_u64(15);
    let model: Model = (0..200)
        .map(|i| {
            (
                format!("key{i:04}").into_bytes(),
                Some(b"same value".to_vec()),
            )
        })
        .collect();
    let (file, meta) = build(&model, lz4(256));
    let mut detected = 0;
    for pos in 0..file.len() {
        let mut bad = file.to_vec();
        bad[pos] ^= 1 << rng.gen_range(0..8);
        let read = SstReader::open(Bytes::from(bad)).and_then(|r| {
            r.iter().collect::<Result<Vec<_>, _>>()?;
            Ok(collect(r.iter()))
        });
        match read {
            Ok(read) => assert_eq!(read, model, "flip at {pos} read wrong data"),
            Err(e) => {
                detected += 1;
                if (pos as u64) < meta.meta_offset {
                    assert!(e.to_string().contains("block"), "{e}");
                }
            }
        }
    }
    assert!(
        detected * 10 > file.len() * 9,
        "{detected} of {}",
        file.len()
    );
}

#[test]
fn lz4_garbage_blocks_never_panic() {
    let mut rng = SmallRng::seed_from_u64(16);
    let model = random_model(&mut rng, 400);
    let (file, _) = build(&model, lz4(512));
    let reader = SstReader::open(file.clone()).unwrap();
    let (off, len) = reader.index().block_handle(1);
    let stored = file[off as usize..(off + len as u64) as usize].to_vec();
    for round in 0..20_000 {
        let mut b = stored.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..b.len());
            b[i] = if round % 2 == 0 { rng.gen() } else { b[i] ^ 1 };
        }
        if round % 7 == 0 {
            b.truncate(rng.gen_range(0..b.len()));
        }
        let _ = reader.index().decode_block(1, Bytes::from(b));
    }
    // A length prefix far beyond any block is refused before allocating.
    let mut huge = stored.clone();
    huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = reader
        .index()
        .decode_block(1, Bytes::from(huge))
        .unwrap_err();
    assert!(err.to_string().contains("claims"), "{err}");
}

#[test]
fn version_1_files_still_read() {
    // Version 1 is version 2 with the compression field reserved (zero).
    let mut rng = SmallRng::seed_from_u64(17);
    let model = random_model(&mut rng, 300);
    let (file, meta) = build(&model, tiny());
    let mut v1 = file.to_vec();
    let footer = v1.len() - FOOTER_LEN;
    v1[footer + 40..footer + 44].copy_from_slice(&1u32.to_le_bytes());
    let meta_start = meta.meta_offset as usize;
    let crc_pos = footer + 44;
    let crc = crc32fast::hash(&v1[meta_start..crc_pos]);
    v1[crc_pos..crc_pos + 4].copy_from_slice(&crc.to_le_bytes());
    let reader = SstReader::open(Bytes::from(v1.clone())).unwrap();
    assert_eq!(collect(reader.iter()), model);
    // ... and a version 1 footer claiming compression is corrupt.
    v1[footer + 20..footer + 24].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32fast::hash(&v1[meta_start..crc_pos]);
    v1[crc_pos..crc_pos + 4].copy_from_slice(&crc.to_le_bytes());
    let err = SstReader::open(Bytes::from(v1)).unwrap_err();
    assert!(err.to_string().contains("compression"), "{err}");
}
