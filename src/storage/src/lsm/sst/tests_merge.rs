//! Merge and compaction tests, plus an (ignored) release-mode benchmark.

use super::tests::{build, collect, random_key, random_value, tiny, Model};
use super::*;
use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::time::Instant;

fn source(entries: &[(&str, Option<&str>)]) -> BoxedEntryIter {
    let owned: Vec<EntryResult> = entries
        .iter()
        .map(|(k, v)| {
            Ok((
                Bytes::copy_from_slice(k.as_bytes()),
                v.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            ))
        })
        .collect();
    Box::new(owned.into_iter())
}

fn model_of(entries: &[(&str, Option<&str>)]) -> Model {
    entries
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.map(|v| v.as_bytes().to_vec())))
        .collect()
}

#[test]
fn merge_newest_source_wins_and_tombstones_shadow() {
    let newest = source(&[("b", None), ("d", Some("d2"))]);
    let middle = source(&[("a", Some("a1")), ("d", Some("d1")), ("e", None)]);
    let oldest = source(&[("a", Some("a0")), ("b", Some("b0")), ("c", Some("c0"))]);
    let merged = collect(MergeIterator::new(vec![newest, middle, oldest]));
    let want = model_of(&[
        ("a", Some("a1")),
        ("b", None),
        ("c", Some("c0")),
        ("d", Some("d2")),
        ("e", None),
    ]);
    assert_eq!(merged, want);
    assert_eq!(MergeIterator::<BoxedEntryIter>::new(vec![]).count(), 0);
    assert_eq!(MergeIterator::new(vec![source(&[])]).count(), 0);
}

#[test]
fn merge_stops_at_the_first_error() {
    let failing: BoxedEntryIter = Box::new(
        vec![
            Ok((Bytes::from_static(b"a"), None)),
            Err(SstError::Corrupt("boom".into())),
            Ok((Bytes::from_static(b"z"), None)),
        ]
        .into_iter(),
    );
    let other = source(&[("a", Some("old")), ("b", Some("b")), ("c", Some("c"))]);
    let out: Vec<EntryResult> = MergeIterator::new(vec![failing, other]).collect();
    assert!(out.iter().any(|r| r.is_err()));
    assert!(out.last().unwrap().is_err(), "nothing after the error");
}

/// Random generations of writes and deletes: returns the input files newest
/// first and the model of the final state (tombstones kept).
fn random_generations(rng: &mut SmallRng, files: usize) -> (Vec<SstReader>, Model) {
    let mut universe: Vec<Vec<u8>> = (0..1500).map(|_| random_key(rng)).collect();
    universe.sort();
    universe.dedup();
    let mut state = Model::new();
    let mut readers = Vec::new();
    for _ in 0..files {
        let mut batch = Model::new();
        for _ in 0..rng.gen_range(1..300) {
            let k = universe[rng.gen_range(0..universe.len())].clone();
            batch.insert(
                k,
                random_value(rng).map(|mut v| {
                    v.truncate(64);
                    v
                }),
            );
        }
        state.extend(batch.clone());
        readers.push(SstReader::open(build(&batch, tiny()).0).unwrap());
    }
    readers.reverse(); // newest first
    (readers, state)
}

fn inputs(readers: &[SstReader]) -> Vec<BoxedEntryIter> {
    readers
        .iter()
        .map(|r| Box::new(r.iter()) as BoxedEntryIter)
        .collect()
}

/// Checks outputs are valid files with increasing, disjoint key ranges and
/// returns their concatenated contents.
fn read_outputs(outputs: &[(Bytes, SstMeta)]) -> Model {
    let mut all = Model::new();
    let mut prev_last: Option<Bytes> = None;
    for (file, meta) in outputs {
        let reader = SstReader::open(file.clone()).unwrap();
        assert_eq!(&reader.meta(), meta);
        assert!(meta.key_count > 0, "empty output");
        assert!(meta.first_key <= meta.last_key);
        if let Some(prev) = &prev_last {
            assert!(
                *prev < meta.first_key,
                "outputs overlap or are out of order"
            );
        }
        prev_last = Some(meta.last_key.clone());
        let before = all.len();
        all.extend(collect(reader.iter()));
        assert_eq!(all.len() - before, meta.key_count as usize);
    }
    all
}

#[test]
fn compact_matches_model() {
    let mut rng = SmallRng::seed_from_u64(11);
    for round in 0..6 {
        let (readers, state) = random_generations(&mut rng, 2 + round * 4);
        let dropped_table = 2u32.to_be_bytes();
        for (drop_tombstones, drop_table) in
            [(false, false), (true, false), (true, true), (false, true)]
        {
            // Also one table per output file when dropping a table.
            let split_prefix_len = if drop_table { 4 } else { 0 };
            let options = CompactOptions {
                sst: tiny(),
                target_file_size: 2048,
                drop_tombstones,
                split_prefix_len,
            };
            let drop_key = |k: &[u8]| drop_table && k.starts_with(&dropped_table);
            let outputs = compact(inputs(&readers), &options, &drop_key).unwrap();
            let want: Model = state
                .iter()
                .filter(|(k, v)| !(drop_key(k) || (drop_tombstones && v.is_none())))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(read_outputs(&outputs), want);
            if split_prefix_len > 0 {
                for (_, meta) in &outputs {
                    assert_eq!(
                        meta.first_key.get(..4),
                        meta.last_key.get(..4),
                        "an output spans two tables"
                    );
                }
            }
            // Merging the outputs of a compaction again changes nothing.
            let readers: Vec<SstReader> = outputs
                .iter()
                .map(|(f, _)| SstReader::open(f.clone()).unwrap())
                .collect();
            let again = compact(inputs(&readers), &options, &|_| false).unwrap();
            assert_eq!(read_outputs(&again), want);
        }
    }
}

#[test]
fn compact_cuts_files_near_the_target_size() {
    let mut rng = SmallRng::seed_from_u64(12);
    let (readers, _) = random_generations(&mut rng, 30);
    for (target, block_size) in [(4096usize, 256usize), (16 * 1024, 1024), (1000, 64)] {
        let options = CompactOptions {
            sst: SstOptions {
                block_size,
                bloom: true,
                compression: if block_size > 256 {
                    Compression::Lz4
                } else {
                    Compression::None
                },
            },
            target_file_size: target,
            split_prefix_len: 0,
            drop_tombstones: false,
        };
        let outputs = compact(inputs(&readers), &options, &|_| false).unwrap();
        assert!(outputs.len() > 3, "expected several outputs");
        read_outputs(&outputs);
        // A file is cut after the entry that reaches the target, so it can
        // overshoot by one entry's footprint: its key (up to ~3 KB here) is
        // stored in the block and, as a block's first and last key, twice in
        // the index; plus its value (<= 64 B) and per-block overhead.
        let max_key = readers
            .iter()
            .flat_map(|r| r.iter().map(|e| e.unwrap().0.len()))
            .max()
            .unwrap();
        let slack = 3 * max_key + 64 + 64;
        for (i, (file, _)) in outputs.iter().enumerate() {
            let size = file.len();
            assert!(
                size <= target + slack,
                "output {i}: {size} bytes, target {target}"
            );
            if i + 1 < outputs.len() {
                // The estimate errs high (filter), so files land a bit short.
                assert!(
                    size * 10 >= target * 8,
                    "output {i}: {size} bytes, target {target}"
                );
            }
        }
    }
}

#[test]
fn compact_edge_cases() {
    let options = CompactOptions {
        sst: tiny(),
        target_file_size: 1 << 20,
        drop_tombstones: true,
        split_prefix_len: 0,
    };
    let only_tombstones = vec![source(&[("a", None), ("b", None)])];
    assert!(compact(only_tombstones, &options, &|_| false)
        .unwrap()
        .is_empty());
    let no_inputs: Vec<BoxedEntryIter> = Vec::new();
    assert!(compact(no_inputs, &options, &|_| false).unwrap().is_empty());
    let everything_dropped = vec![source(&[("a", Some("1"))])];
    assert!(compact(everything_dropped, &options, &|_| true)
        .unwrap()
        .is_empty());

    // Errors from inputs and from the sink propagate.
    let failing: BoxedEntryIter = Box::new(std::iter::once(Err(SstError::External("io".into()))));
    assert!(matches!(
        compact(vec![failing], &options, &|_| false),
        Err(SstError::External(_))
    ));
    let result = compact_into(
        vec![source(&[("a", Some("1"))])],
        &options,
        &|_| false,
        |_, _| Err(SstError::External("upload failed".into())),
    );
    assert!(matches!(result, Err(SstError::External(_))));
}

/// `cargo test --release -- --ignored --nocapture bench_1m`
#[test]
#[ignore]
fn bench_1m_entries() {
    let n = 1_000_000u64;
    let key = |i: u64| {
        let mut k = [0u8; 16];
        k[..4].copy_from_slice(&5u32.to_be_bytes());
        k[4..6].copy_from_slice(&((i >> 12) as u16).to_be_bytes());
        k[6..14].copy_from_slice(&i.to_be_bytes());
        k
    };
    let value = [7u8; 32];
    let t = Instant::now();
    let mut builder = SstBuilder::new(SstOptions::default());
    for i in 0..n {
        builder.add(&key(i), if i % 10 == 0 { None } else { Some(&value) });
    }
    let (file, meta) = builder.finish();
    let build = t.elapsed();

    let t = Instant::now();
    let reader = SstReader::open(file.clone()).unwrap();
    let open = t.elapsed();

    let t = Instant::now();
    let scanned = reader.iter().map(|e| e.unwrap().0.len()).sum::<usize>();
    let scan = t.elapsed();
    assert_eq!(scanned, 16 * n as usize);

    // Point gets on decoded (cached) blocks: binary search only.
    let blocks: Vec<Block> = (0..reader.index().block_count())
        .map(|i| reader.block(i).unwrap())
        .collect();
    let mut rng = SmallRng::seed_from_u64(1);
    let probes: Vec<[u8; 16]> = (0..n).map(|_| key(rng.gen_range(0..n))).collect();
    let t = Instant::now();
    let mut found = 0;
    for k in &probes {
        if reader.index().may_contain(k) {
            if let Some(i) = reader.index().find_block(k) {
                found += usize::from(blocks[i].get_ref(k).is_some());
            }
        }
    }
    let gets = t.elapsed();
    assert_eq!(found, n as usize);

    let t = Instant::now();
    let outputs = compact(
        vec![reader.iter_range(Bound::Unbounded, Bound::Unbounded)],
        &CompactOptions::default(),
        &|_| false,
    )
    .unwrap();
    let compaction = t.elapsed();
    eprintln!(
        "1M entries, {} MB, {} blocks: build {build:?}, open {open:?}, full scan {scan:?}, \
         1M cached point gets {gets:?}, compact 1 input -> {} outputs {compaction:?}",
        meta.size / 1_000_000,
        meta.block_count,
        outputs.len()
    );
}
