//! The [`StateStore`] contract as executable checks, run against every
//! implementation (memory, and object-store files with a SQL meta store)
//! on a fresh, empty store.

use std::ops::Bound;

use bytes::Bytes;

use crate::{prefix_range, table_prefix, vnode_prefix, EpochCommitter, KeyedWrite, StateStore};

/// `table | vnode | pk` key.
pub fn key(table: u32, vnode: u16, pk: &str) -> Bytes {
    let mut k = vnode_prefix(table, vnode);
    k.extend_from_slice(pk.as_bytes());
    Bytes::from(k)
}

pub fn put(table: u32, vnode: u16, pk: &str, v: &str) -> KeyedWrite {
    (
        key(table, vnode, pk),
        Some(Bytes::copy_from_slice(v.as_bytes())),
    )
}

pub fn del(table: u32, vnode: u16, pk: &str) -> KeyedWrite {
    (key(table, vnode, pk), None)
}

async fn get(s: &dyn StateStore, k: &Bytes, uncommitted: bool) -> Option<String> {
    s.get(k, uncommitted)
        .await
        .expect("get")
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

/// Values of a scan, as text (keys are checked by the caller's choice of
/// distinct values).
async fn scan(s: &dyn StateStore, range: crate::KeyRange, uncommitted: bool) -> Vec<String> {
    let rows = s.scan(range, uncommitted).await.expect("scan");
    for w in rows.windows(2) {
        assert!(w[0].0 < w[1].0, "scan out of order or duplicated");
    }
    rows.into_iter()
        .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
        .collect()
}

fn table(t: u32) -> crate::KeyRange {
    prefix_range(&table_prefix(t))
}

/// Syncs `epoch` and commits it.
pub async fn commit(s: &dyn StateStore, c: &dyn EpochCommitter, epoch: u64) {
    let files = s.sync(epoch).await.expect("sync");
    c.commit_epoch(epoch, files, None).await.expect("commit");
}

/// Runs the whole contract on `s` (committed by `c`), which must be empty
/// and at epoch 0.
pub async fn check_state_store(s: &dyn StateStore, c: &dyn EpochCommitter) {
    // Empty.
    assert_eq!(s.committed_epoch(), 0);
    assert_eq!(get(s, &key(1, 0, "a"), true).await, None);
    assert!(scan(s, prefix_range(b""), true).await.is_empty());

    // Staged writes: visible to uncommitted reads only; within an epoch the
    // last write wins, across epochs the latest epoch wins.
    s.ingest(1, vec![put(1, 0, "a", "a1"), put(1, 0, "b", "b1")])
        .unwrap();
    s.ingest(1, vec![put(1, 0, "b", "b1'"), put(1, 1, "c", "c1")])
        .unwrap();
    s.ingest(2, vec![put(1, 0, "a", "a2"), del(1, 1, "c")])
        .unwrap();
    s.ingest(2, vec![]).unwrap();
    assert_eq!(get(s, &key(1, 0, "a"), false).await, None);
    assert_eq!(get(s, &key(1, 0, "a"), true).await.as_deref(), Some("a2"));
    assert_eq!(get(s, &key(1, 0, "b"), true).await.as_deref(), Some("b1'"));
    assert_eq!(get(s, &key(1, 1, "c"), true).await, None);
    assert!(scan(s, table(1), false).await.is_empty());
    assert_eq!(scan(s, table(1), true).await, ["a2", "b1'"]);

    // Commit 1: epoch 1 becomes committed, epoch 2 stays staged on top.
    commit(s, c, 1).await;
    assert_eq!(s.committed_epoch(), 1);
    assert_eq!(get(s, &key(1, 0, "a"), false).await.as_deref(), Some("a1"));
    assert_eq!(get(s, &key(1, 1, "c"), false).await.as_deref(), Some("c1"));
    assert_eq!(scan(s, table(1), false).await, ["a1", "b1'", "c1"]);
    assert_eq!(get(s, &key(1, 0, "a"), true).await.as_deref(), Some("a2"));
    assert_eq!(
        get(s, &key(1, 1, "c"), true).await,
        None,
        "staged delete hides"
    );
    assert_eq!(scan(s, table(1), true).await, ["a2", "b1'"]);

    commit(s, c, 2).await;
    assert_eq!(s.committed_epoch(), 2);
    assert_eq!(scan(s, table(1), false).await, ["a2", "b1'"]);
    assert_eq!(scan(s, table(1), true).await, ["a2", "b1'"]);

    // Scans: prefixes of a table and of a vnode, explicit bounds, and
    // staged inserts/deletes interleaved with committed keys.
    s.ingest(
        3,
        vec![
            put(2, 0, "k1", "t2v0k1"),
            put(2, 0, "k3", "t2v0k3"),
            put(2, 1, "k1", "t2v1k1"),
            put(2, 256, "k1", "t2v256k1"),
            put(3, 0, "k1", "t3v0k1"),
            put(0x0100, 0, "k1", "t256"),
        ],
    )
    .unwrap();
    commit(s, c, 3).await;
    s.ingest(
        4,
        vec![
            put(2, 0, "k0", "t2v0k0*"),
            put(2, 0, "k2", "t2v0k2*"),
            del(2, 0, "k3"),
            put(2, 0, "k4", "t2v0k4*"),
            put(2, 1, "k1", "t2v1k1*"),
            del(3, 0, "k1"),
        ],
    )
    .unwrap();
    let t2 = ["t2v0k1", "t2v0k3", "t2v1k1", "t2v256k1"];
    assert_eq!(scan(s, table(2), false).await, t2);
    assert_eq!(
        scan(s, table(2), true).await,
        ["t2v0k0*", "t2v0k1", "t2v0k2*", "t2v0k4*", "t2v1k1*", "t2v256k1"]
    );
    assert_eq!(
        scan(s, prefix_range(&vnode_prefix(2, 0)), false).await,
        ["t2v0k1", "t2v0k3"]
    );
    assert_eq!(
        scan(s, prefix_range(&vnode_prefix(2, 0)), true).await,
        ["t2v0k0*", "t2v0k1", "t2v0k2*", "t2v0k4*"]
    );
    assert_eq!(
        scan(s, prefix_range(&vnode_prefix(2, 1)), true).await,
        ["t2v1k1*"]
    );
    assert!(scan(s, prefix_range(&vnode_prefix(2, 2)), true)
        .await
        .is_empty());
    assert_eq!(scan(s, table(3), false).await, ["t3v0k1"]);
    assert!(scan(s, table(3), true).await.is_empty());
    assert_eq!(scan(s, table(0x0100), true).await, ["t256"]);
    let range = |lo: Bound<&str>, hi: Bound<&str>| {
        let k = |b: Bound<&str>| b.map(|pk| key(2, 0, pk).to_vec());
        (k(lo), k(hi))
    };
    use Bound::*;
    assert_eq!(
        scan(s, range(Included("k1"), Excluded("k3")), true).await,
        ["t2v0k1", "t2v0k2*"]
    );
    assert_eq!(
        scan(s, range(Excluded("k1"), Included("k4")), true).await,
        ["t2v0k2*", "t2v0k4*"]
    );
    assert_eq!(
        scan(s, range(Excluded("k1"), Included("k3")), false).await,
        ["t2v0k3"]
    );
    assert_eq!(
        scan(s, range(Included("k1"), Included("k1")), true).await,
        ["t2v0k1"]
    );
    assert!(scan(s, range(Excluded("k1"), Excluded("k2")), true)
        .await
        .is_empty());
    assert_eq!(
        scan(s, (Unbounded, Excluded(table_prefix(2))), true).await,
        ["a2", "b1'"]
    );
    assert_eq!(
        scan(s, (Included(table_prefix(3)), Unbounded), false).await,
        ["t3v0k1", "t256"]
    );
    assert_eq!(scan(s, prefix_range(b""), false).await.len(), 8);

    // Abort drops every staged write; committed data and epoch stay.
    s.ingest(5, vec![put(2, 0, "k9", "x")]).unwrap();
    s.abort_uncommitted();
    assert_eq!(s.committed_epoch(), 3);
    assert_eq!(scan(s, table(2), true).await, t2);
    assert_eq!(
        get(s, &key(3, 0, "k1"), true).await.as_deref(),
        Some("t3v0k1")
    );
    // Committing after an abort commits nothing staged before it.
    commit(s, c, 5).await;
    assert_eq!(s.committed_epoch(), 5);
    assert_eq!(scan(s, table(2), false).await, t2);

    // drop_table: at the next commit, removes the committed state of that
    // table only (not of table 0x0100, whose id shares bytes with it),
    // including what that commit itself brings.
    s.ingest(6, vec![put(2, 7, "new", "staged-after-drop")])
        .unwrap();
    c.drop_table(2);
    c.drop_table(99);
    assert_eq!(
        scan(s, table(2), false).await,
        t2,
        "a drop waits for the commit"
    );
    commit(s, c, 6).await;
    assert!(scan(s, table(2), false).await.is_empty());
    assert!(scan(s, table(2), true).await.is_empty());
    assert_eq!(get(s, &key(2, 0, "k1"), false).await, None);
    assert_eq!(scan(s, table(3), false).await, ["t3v0k1"]);
    assert_eq!(scan(s, table(0x0100), false).await, ["t256"]);
    assert_eq!(scan(s, table(1), false).await, ["a2", "b1'"]);

    // Snapshots stay at their epoch.
    let snap = s.snapshot();
    assert_eq!(snap.epoch(), 6);
    s.ingest(7, vec![put(1, 0, "late", "late"), del(1, 0, "a")])
        .unwrap();
    commit(s, c, 7).await;
    assert_eq!(
        get(s, &key(1, 0, "late"), false).await.as_deref(),
        Some("late")
    );
    let old: Vec<_> = snap.scan(table(1)).await.expect("snapshot scan");
    assert_eq!(old.len(), 2, "the snapshot still sees epoch 6");
    assert_eq!(s.committed_epoch(), 7);

    // Limited committed scans.
    let first = s
        .scan_committed_limit(table(1), 1)
        .await
        .expect("limited scan");
    assert_eq!(first.len(), 1);
    assert_eq!(&first[0].1[..], b"b1'");

    // Empty values and keys with 0xff bytes.
    let ff = Bytes::from_static(&[0, 0, 0, 9, 0xff, 0xff, 0xff]);
    s.ingest(8, vec![(ff.clone(), Some(Bytes::new()))]).unwrap();
    commit(s, c, 8).await;
    assert_eq!(s.get(&ff, false).await.unwrap(), Some(Bytes::new()));
    assert_eq!(
        s.scan(table(9), false).await.unwrap(),
        vec![(ff, Bytes::new())]
    );
}
