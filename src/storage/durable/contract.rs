//! The [`StateStore`] contract as executable checks, run against every
//! implementation (memory and durable) on a fresh, empty store.

use std::ops::Bound;

use bytes::Bytes;

use crate::storage::{prefix_range, table_prefix, vnode_prefix, KeyedWrite, StateStore};

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

fn get(s: &dyn StateStore, k: &Bytes, uncommitted: bool) -> Option<String> {
    s.get(k, uncommitted)
        .expect("get")
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

/// Values of a scan, as text (keys are checked by the caller's choice of
/// distinct values).
fn scan(s: &dyn StateStore, range: crate::storage::KeyRange, uncommitted: bool) -> Vec<String> {
    let rows = s.scan(range, uncommitted).expect("scan");
    for w in rows.windows(2) {
        assert!(w[0].0 < w[1].0, "scan out of order or duplicated");
    }
    rows.into_iter()
        .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
        .collect()
}

fn table(t: u32) -> crate::storage::KeyRange {
    prefix_range(&table_prefix(t))
}

/// Runs the whole contract on `s`, which must be empty and at epoch 0.
pub fn check_state_store(s: &dyn StateStore) {
    // Empty.
    assert_eq!(s.committed_epoch(), 0);
    assert_eq!(get(s, &key(1, 0, "a"), true), None);
    assert!(scan(s, prefix_range(b""), true).is_empty());

    // Staged writes: visible to uncommitted reads only; within an epoch the
    // last write wins, across epochs the latest epoch wins.
    s.ingest(1, vec![put(1, 0, "a", "a1"), put(1, 0, "b", "b1")])
        .unwrap();
    s.ingest(1, vec![put(1, 0, "b", "b1'"), put(1, 1, "c", "c1")])
        .unwrap();
    s.ingest(2, vec![put(1, 0, "a", "a2"), del(1, 1, "c")])
        .unwrap();
    s.ingest(2, vec![]).unwrap();
    assert_eq!(get(s, &key(1, 0, "a"), false), None);
    assert_eq!(get(s, &key(1, 0, "a"), true).as_deref(), Some("a2"));
    assert_eq!(get(s, &key(1, 0, "b"), true).as_deref(), Some("b1'"));
    assert_eq!(get(s, &key(1, 1, "c"), true), None);
    assert!(scan(s, table(1), false).is_empty());
    assert_eq!(scan(s, table(1), true), ["a2", "b1'"]);

    // Commit 1: epoch 1 becomes committed, epoch 2 stays staged on top.
    s.commit(1).unwrap();
    assert_eq!(s.committed_epoch(), 1);
    assert_eq!(get(s, &key(1, 0, "a"), false).as_deref(), Some("a1"));
    assert_eq!(get(s, &key(1, 1, "c"), false).as_deref(), Some("c1"));
    assert_eq!(scan(s, table(1), false), ["a1", "b1'", "c1"]);
    assert_eq!(get(s, &key(1, 0, "a"), true).as_deref(), Some("a2"));
    assert_eq!(get(s, &key(1, 1, "c"), true), None, "staged delete hides");
    assert_eq!(scan(s, table(1), true), ["a2", "b1'"]);

    s.commit(2).unwrap();
    assert_eq!(s.committed_epoch(), 2);
    assert_eq!(scan(s, table(1), false), ["a2", "b1'"]);
    assert_eq!(scan(s, table(1), true), ["a2", "b1'"]);

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
    s.commit(3).unwrap();
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
    assert_eq!(scan(s, table(2), false), t2);
    assert_eq!(
        scan(s, table(2), true),
        ["t2v0k0*", "t2v0k1", "t2v0k2*", "t2v0k4*", "t2v1k1*", "t2v256k1"]
    );
    assert_eq!(
        scan(s, prefix_range(&vnode_prefix(2, 0)), false),
        ["t2v0k1", "t2v0k3"]
    );
    assert_eq!(
        scan(s, prefix_range(&vnode_prefix(2, 0)), true),
        ["t2v0k0*", "t2v0k1", "t2v0k2*", "t2v0k4*"]
    );
    assert_eq!(
        scan(s, prefix_range(&vnode_prefix(2, 1)), true),
        ["t2v1k1*"]
    );
    assert!(scan(s, prefix_range(&vnode_prefix(2, 2)), true).is_empty());
    assert_eq!(scan(s, table(3), false), ["t3v0k1"]);
    assert!(scan(s, table(3), true).is_empty());
    assert_eq!(scan(s, table(0x0100), true), ["t256"]);
    let range = |lo: Bound<&str>, hi: Bound<&str>| {
        let k = |b: Bound<&str>| b.map(|pk| key(2, 0, pk).to_vec());
        (k(lo), k(hi))
    };
    use Bound::*;
    assert_eq!(
        scan(s, range(Included("k1"), Excluded("k3")), true),
        ["t2v0k1", "t2v0k2*"]
    );
    assert_eq!(
        scan(s, range(Excluded("k1"), Included("k4")), true),
        ["t2v0k2*", "t2v0k4*"]
    );
    assert_eq!(
        scan(s, range(Excluded("k1"), Included("k3")), false),
        ["t2v0k3"]
    );
    assert_eq!(
        scan(s, range(Included("k1"), Included("k1")), true),
        ["t2v0k1"]
    );
    assert!(scan(s, range(Excluded("k1"), Excluded("k2")), true).is_empty());
    assert_eq!(
        scan(s, (Unbounded, Excluded(table_prefix(2))), true),
        ["a2", "b1'"]
    );
    assert_eq!(
        scan(s, (Included(table_prefix(3)), Unbounded), false),
        ["t3v0k1", "t256"]
    );
    assert_eq!(scan(s, prefix_range(b""), false).len(), 8);

    // Abort drops every staged write; committed data and epoch stay.
    s.ingest(5, vec![put(2, 0, "k9", "x")]).unwrap();
    s.abort_uncommitted();
    assert_eq!(s.committed_epoch(), 3);
    assert_eq!(scan(s, table(2), true), t2);
    assert_eq!(get(s, &key(3, 0, "k1"), true).as_deref(), Some("t3v0k1"));
    // Committing after an abort commits nothing staged before it.
    s.commit(5).unwrap();
    assert_eq!(s.committed_epoch(), 5);
    assert_eq!(scan(s, table(2), false), t2);

    // delete_table: removes the committed state of that table only (not
    // of table 0x0100, whose id shares bytes with it); staged writes of
    // the table are untouched and commit later.
    s.ingest(6, vec![put(2, 7, "new", "staged-after-drop")])
        .unwrap();
    s.delete_table(2).unwrap();
    assert!(scan(s, table(2), false).is_empty());
    assert_eq!(get(s, &key(2, 0, "k1"), false), None);
    assert_eq!(scan(s, table(2), true), ["staged-after-drop"]);
    assert_eq!(scan(s, table(3), false), ["t3v0k1"]);
    assert_eq!(scan(s, table(0x0100), false), ["t256"]);
    assert_eq!(scan(s, table(1), false), ["a2", "b1'"]);
    s.delete_table(99).unwrap();
    s.commit(6).unwrap();
    assert_eq!(scan(s, table(2), false), ["staged-after-drop"]);

    // The committed epoch never goes back; a commit of an older epoch
    // still applies what is staged for it.
    s.ingest(4, vec![put(1, 0, "late", "late")]).unwrap();
    assert_eq!(get(s, &key(1, 0, "late"), true).as_deref(), Some("late"));
    s.commit(4).unwrap();
    assert_eq!(s.committed_epoch(), 6);
    assert_eq!(get(s, &key(1, 0, "late"), false).as_deref(), Some("late"));

    // A staged write of a smaller epoch than the committed one still
    // shadows committed data for uncommitted reads.
    s.ingest(2, vec![del(1, 0, "late")]).unwrap();
    assert_eq!(get(s, &key(1, 0, "late"), true), None);
    assert_eq!(get(s, &key(1, 0, "late"), false).as_deref(), Some("late"));
    s.commit(7).unwrap();
    assert_eq!(get(s, &key(1, 0, "late"), false), None);
    assert_eq!(s.committed_epoch(), 7);

    // Empty values and keys with 0xff bytes.
    let ff = Bytes::from_static(&[0, 0, 0, 9, 0xff, 0xff, 0xff]);
    s.ingest(8, vec![(ff.clone(), Some(Bytes::new()))]).unwrap();
    s.commit(8).unwrap();
    assert_eq!(s.get(&ff, false).unwrap(), Some(Bytes::new()));
    assert_eq!(s.scan(table(9), false).unwrap(), vec![(ff, Bytes::new())]);
}
