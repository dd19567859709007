//! Runtime tests below SQL: jobs built from hand-made logical plans, driven
//! by DML and FLUSH, read back at the committed epoch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::session::{create_mv_job, create_table_job, LocalSessionFactory};
use crate::{Session, SessionFactory, StatementResult};
use ebbflow_common::{DataType, Op, Row, ScalarValue, StreamChunk};
use ebbflow_meta::catalog::{ColumnDesc, RelationDesc};
use ebbflow_meta::service::Parallelism;
use ebbflow_meta::{Meta, MetaConfig};
use ebbflow_planner::logical::{JoinKind, LogicalPlan, OrderKey};

fn meta() -> Arc<Meta> {
    Meta::start(MetaConfig {
        compute_nodes: 2,
        remote_workers: false,
        parallel_units: 2,
        barrier_interval: Duration::from_millis(5),
    })
}

/// A table of BIGINT columns, primary key `pk` (none: a hidden row id).
async fn create_table(meta: &Meta, name: &str, cols: &[&str], pk: Vec<usize>) -> Arc<RelationDesc> {
    let columns = cols
        .iter()
        .map(|n| ColumnDesc::new(*n, DataType::Int64))
        .collect();
    create_table_job(
        meta,
        name.into(),
        columns,
        pk,
        BTreeMap::new(),
        Parallelism::Adaptive,
        false,
        None,
        Default::default(),
    )
    .await
    .unwrap();
    meta.relation_by_name(name).unwrap()
}

async fn create_mv(
    meta: &Arc<Meta>,
    name: &str,
    plan: LogicalPlan,
    names: &[&str],
) -> Arc<RelationDesc> {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    create_mv_job(
        meta,
        name.into(),
        &plan,
        &names,
        "test".into(),
        BTreeMap::new(),
        Parallelism::Adaptive,
        Vec::new(),
        ebbflow_planner::stream::Emit::OnUpdate,
    )
    .await
    .unwrap();
    meta.relation_by_name(name).unwrap()
}

fn scan(relation: &Arc<RelationDesc>) -> LogicalPlan {
    LogicalPlan::Scan {
        relation: relation.clone(),
    }
}

fn i(v: i64) -> Option<ScalarValue> {
    Some(ScalarValue::Int64(v))
}

async fn sorted_visible(meta: &Meta, r: &RelationDesc) -> Vec<Row> {
    let vis: Vec<usize> = r.visible_columns().map(|(i, _)| i).collect();
    let mut rows: Vec<Row> = meta
        .scan(r)
        .await
        .unwrap()
        .into_iter()
        .map(|row| vis.iter().map(|&i| row[i].clone()).collect())
        .collect();
    rows.sort();
    rows
}

#[tokio::test]
async fn table_and_mv_on_it_with_backfill() {
    let meta = meta();
    let t = create_table(&meta, "t", &["k", "v"], vec![0]).await;
    meta.write_dml(
        t.id,
        StreamChunk::inserts(vec![vec![i(1), i(10)], vec![i(2), i(20)]]),
    )
    .await
    .unwrap();
    meta.flush().await.unwrap();
    // backfill: the MV sees rows that existed before it
    let mv = create_mv(&meta, "mv", scan(&t), &["k", "v"]).await;
    assert_eq!(
        sorted_visible(&meta, &mv).await,
        vec![vec![i(1), i(10)], vec![i(2), i(20)]]
    );
    // overwrite on pk, delete, insert
    meta.write_dml(
        t.id,
        StreamChunk::from_rows(
            vec![Op::Insert, Op::Delete, Op::Insert],
            vec![vec![i(1), i(11)], vec![i(2), None], vec![i(3), i(30)]],
        ),
    )
    .await
    .unwrap();
    meta.flush().await.unwrap();
    assert_eq!(
        sorted_visible(&meta, &t).await,
        vec![vec![i(1), i(11)], vec![i(3), i(30)]]
    );
    assert_eq!(
        sorted_visible(&meta, &mv).await,
        vec![vec![i(1), i(11)], vec![i(3), i(30)]]
    );
    meta.drop_relation(t.id, true).await.unwrap();
    assert!(meta.relation_by_name("mv").is_none());
}

#[tokio::test]
async fn joins_of_every_kind() {
    let meta = meta();
    let a = create_table(&meta, "a", &["id", "k"], vec![0]).await;
    let b = create_table(&meta, "b", &["id", "k"], vec![0]).await;
    let mut mvs = Vec::new();
    for (n, kind) in [
        ("inner", JoinKind::Inner),
        ("left", JoinKind::Left),
        ("right", JoinKind::Right),
        ("full", JoinKind::Full),
    ] {
        let plan = LogicalPlan::Join {
            left: Box::new(scan(&a)),
            right: Box::new(scan(&b)),
            kind,
            on: vec![(1, 1)],
            condition: None,
        };
        mvs.push((
            kind,
            create_mv(&meta, n, plan, &["aid", "ak", "bid", "bk"]).await,
        ));
    }
    meta.write_dml(
        a.id,
        StreamChunk::inserts(vec![vec![i(1), i(1)], vec![i(2), i(2)], vec![i(3), None]]),
    )
    .await
    .unwrap();
    meta.write_dml(
        b.id,
        StreamChunk::inserts(vec![
            vec![i(10), i(1)],
            vec![i(11), i(1)],
            vec![i(12), i(5)],
        ]),
    )
    .await
    .unwrap();
    meta.flush().await.unwrap();
    // then retract a's key 1 row and b's key 5 row
    meta.write_dml(
        a.id,
        StreamChunk::from_rows(vec![Op::Delete], vec![vec![i(1), i(1)]]),
    )
    .await
    .unwrap();
    meta.write_dml(
        b.id,
        StreamChunk::from_rows(vec![Op::Delete], vec![vec![i(12), i(5)]]),
    )
    .await
    .unwrap();
    meta.flush().await.unwrap();
    for (kind, mv) in &mvs {
        let got = sorted_visible(&meta, mv).await;
        let mut expect: Vec<Row> = match kind {
            JoinKind::Inner => vec![],
            JoinKind::Left => vec![vec![i(2), i(2), None, None], vec![i(3), None, None, None]],
            JoinKind::Right => vec![vec![None, None, i(10), i(1)], vec![None, None, i(11), i(1)]],
            JoinKind::Full => vec![
                vec![i(2), i(2), None, None],
                vec![i(3), None, None, None],
                vec![None, None, i(10), i(1)],
                vec![None, None, i(11), i(1)],
            ],
            JoinKind::LeftSemi | JoinKind::LeftAnti => unreachable!("not in this test"),
        };
        expect.sort();
        assert_eq!(got, expect, "{kind:?}");
    }
    // bring key 1 back: the right side rows match again
    meta.write_dml(a.id, StreamChunk::inserts(vec![vec![i(4), i(1)]]))
        .await
        .unwrap();
    meta.flush().await.unwrap();
    let full = &mvs[3].1;
    let mut expect = vec![
        vec![i(2), i(2), None, None],
        vec![i(3), None, None, None],
        vec![i(4), i(1), i(10), i(1)],
        vec![i(4), i(1), i(11), i(1)],
    ];
    expect.sort();
    assert_eq!(sorted_visible(&meta, full).await, expect);
}

#[tokio::test]
async fn top_n_union_and_mv_on_mv() {
    let meta = meta();
    let t = create_table(&meta, "t", &["v"], vec![]).await;
    let top = create_mv(
        &meta,
        "top2",
        LogicalPlan::TopN {
            input: Box::new(scan(&t)),
            order: vec![OrderKey {
                index: 0,
                desc: true,
                nulls_first: false,
            }],
            limit: Some(2),
            offset: 0,
        },
        &["v"],
    )
    .await;
    let union = create_mv(
        &meta,
        "u",
        LogicalPlan::Union {
            inputs: vec![scan(&t), scan(&top)],
        },
        &["v"],
    )
    .await;
    let rows: Vec<Row> = (1..=5).map(|v| vec![i(v), None]).collect();
    meta.write_dml(t.id, StreamChunk::inserts(rows))
        .await
        .unwrap();
    meta.flush().await.unwrap();
    assert_eq!(
        sorted_visible(&meta, &top).await,
        vec![vec![i(4)], vec![i(5)]]
    );
    assert_eq!(sorted_visible(&meta, &union).await.len(), 7);
    // delete the top row: 3 moves in
    let all = meta.scan(&t).await.unwrap();
    let five: Vec<Row> = all.into_iter().filter(|r| r[0] == i(5)).collect();
    meta.write_dml(t.id, StreamChunk::from_rows(vec![Op::Delete], five))
        .await
        .unwrap();
    meta.flush().await.unwrap();
    assert_eq!(
        sorted_visible(&meta, &top).await,
        vec![vec![i(3)], vec![i(4)]]
    );
    assert_eq!(sorted_visible(&meta, &union).await.len(), 6);
}

#[tokio::test]
async fn datagen_feeds_a_table_exactly_once() {
    let meta = meta();
    let columns = vec![
        ColumnDesc::new("id", DataType::Int32),
        ColumnDesc::new("v", DataType::Int32),
    ];
    let opts = [
        ("connector", "datagen"),
        ("rows_per_second", "20000"),
        ("fields.id.kind", "sequence"),
        ("fields.id.start", "1"),
        ("fields.id.end", "3000"),
        ("fields.v.kind", "random"),
        ("fields.v.min", "1"),
        ("fields.v.max", "10"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    create_table_job(
        &meta,
        "g".into(),
        columns,
        vec![],
        opts,
        Parallelism::Adaptive,
        false,
        None,
        Default::default(),
    )
    .await
    .unwrap();
    let t = meta.relation_by_name("g").unwrap();
    let mut n = 0;
    for _ in 0..200 {
        meta.flush().await.unwrap();
        n = meta.scan(&t).await.unwrap().len();
        if n >= 3000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(n, 3000);
    let mut ids: Vec<i32> = meta
        .scan(&t)
        .await
        .unwrap()
        .iter()
        .map(|r| match &r[0] {
            Some(ScalarValue::Int32(v)) => *v,
            _ => 0,
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=3000).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actor_failure_recovers_from_last_committed_epoch() {
    let meta = meta();
    let t = create_table(&meta, "t", &["k", "v"], vec![0]).await;
    let mv = create_mv(&meta, "mv", scan(&t), &["k", "v"]).await;
    meta.write_dml(t.id, StreamChunk::inserts(vec![vec![i(1), i(1)]]))
        .await
        .unwrap();
    meta.flush().await.unwrap();
    let frag = meta.materialize_fragment(mv.id).expect("the MV's fragment");
    meta.inject_actor_failure(frag);
    // This row reaches the failing actor: the epoch it is in never commits.
    meta.write_dml(t.id, StreamChunk::inserts(vec![vec![i(2), i(2)]]))
        .await
        .unwrap();
    let _ = meta.flush().await;
    // wait for recovery, then everything works again
    for _ in 0..500 {
        if meta.recovery_count() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(meta.recovery_count() >= 1);
    meta.flush().await.unwrap();
    assert_eq!(
        sorted_visible(&meta, &t).await,
        sorted_visible(&meta, &mv).await
    );
    meta.write_dml(t.id, StreamChunk::inserts(vec![vec![i(3), i(3)]]))
        .await
        .unwrap();
    meta.flush().await.unwrap();
    let rows = sorted_visible(&meta, &mv).await;
    assert!(rows.contains(&vec![i(1), i(1)]) && rows.contains(&vec![i(3), i(3)]));
    assert_eq!(sorted_visible(&meta, &t).await, rows);
}

/// A SQL session on `meta`.
fn session(meta: &Arc<Meta>) -> Arc<dyn Session> {
    LocalSessionFactory { meta: meta.clone() }.new_session("root", "dev")
}

/// Run SQL through a session (any error fails the test) and render the
/// rows of the last statement as sorted text lines.
async fn sql(session: &dyn Session, q: &str) -> Vec<String> {
    let (results, err) = session.run_simple(q).await;
    if let Some(e) = err {
        panic!("{q}: {} ({})", e, e.kind());
    }
    let mut lines: Vec<String> = match results.last() {
        Some(StatementResult::Rows { rows, .. }) => rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|d| match d {
                        None => "NULL".to_string(),
                        Some(v) => ebbflow_common::text::format_datum(v),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect(),
        _ => vec![],
    };
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_aggregates_min_max_retraction() {
    let s = session(&meta());
    sql(&*s, "SET rw_implicit_flush = true").await;
    sql(&*s, "CREATE TABLE t (k int, v int)").await;
    sql(
        &*s,
        "INSERT INTO t VALUES (1, 10), (1, 20), (2, 5), (2, NULL), (3, NULL)",
    )
    .await;
    sql(&*s, "CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS c, count(v) AS cv, sum(v) AS s, min(v) AS mi, max(v) AS ma, avg(v) AS a FROM t GROUP BY k").await;
    sql(
        &*s,
        "CREATE MATERIALIZED VIEW g AS SELECT count(*) AS c, sum(v) AS s FROM t",
    )
    .await;
    assert_eq!(
        sql(&*s, "SELECT * FROM mv").await,
        vec![
            "1 2 2 30 10 20 15.0000000000000000",
            "2 2 1 5 5 5 5.0000000000000000",
            "3 1 0 NULL NULL NULL NULL"
        ]
    );
    sql(&*s, "DELETE FROM t WHERE v = 20").await;
    sql(&*s, "UPDATE t SET v = 7 WHERE k = 3").await;
    sql(&*s, "DELETE FROM t WHERE k = 2").await;
    assert_eq!(
        sql(&*s, "SELECT * FROM mv").await,
        vec![
            "1 1 1 10 10 10 10.0000000000000000",
            "3 1 1 7 7 7 7.0000000000000000"
        ]
    );
    assert_eq!(sql(&*s, "SELECT * FROM g").await, vec!["2 17"]);
    sql(&*s, "DELETE FROM t").await;
    assert_eq!(sql(&*s, "SELECT * FROM g").await, vec!["0 NULL"]);
    assert!(sql(&*s, "SELECT * FROM mv").await.is_empty());
}

/// Scale every kind of fragment back and forth while another session keeps
/// writing; afterwards every MV equals its query re-run as a batch SELECT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_under_concurrent_writes_is_exact() {
    use rand::{Rng, SeedableRng};
    let meta = meta();
    let s = session(&meta);
    sql(&*s, "CREATE TABLE a (id int PRIMARY KEY, k int, v int)").await;
    sql(&*s, "CREATE TABLE b (k int, w int)").await;
    let mvs = [
        (
            "m_agg",
            "SELECT k, count(*) AS c, sum(v) AS s, min(v) AS mn, max(v) AS mx FROM a GROUP BY k",
        ),
        ("m_join", "SELECT a.id, a.v, b.w FROM a JOIN b ON a.k = b.k"),
        ("m_left", "SELECT a.id, b.w FROM a LEFT JOIN b ON a.k = b.k"),
        ("m_top", "SELECT id, v FROM a ORDER BY v DESC, id LIMIT 5"),
        ("m_global", "SELECT count(*) AS c, sum(v) AS s FROM a"),
    ];
    for (name, q) in mvs {
        sql(&*s, &format!("CREATE MATERIALIZED VIEW {name} AS {q}")).await;
    }
    sql(
        &*s,
        "CREATE MATERIALIZED VIEW m_on_mv AS SELECT k, c * 2 AS c2 FROM m_agg",
    )
    .await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let w = session(&meta);
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(1);
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let id = rng.gen_range(0..200);
                let stmt = match rng.gen_range(0..5) {
                    0 | 1 => format!(
                        "INSERT INTO a VALUES ({id}, {}, {})",
                        rng.gen_range(0..10),
                        rng.gen_range(-50..50)
                    ),
                    2 => format!(
                        "UPDATE a SET v = v + 1, k = {} WHERE id = {id}",
                        rng.gen_range(0..10)
                    ),
                    3 => format!("DELETE FROM a WHERE id = {id}"),
                    _ => format!(
                        "INSERT INTO b VALUES ({}, {})",
                        rng.gen_range(0..10),
                        rng.gen_range(0..100)
                    ),
                };
                sql(&*w, &stmt).await;
                n += 1;
            }
            n
        })
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let targets = [
        "TABLE a",
        "TABLE b",
        "MATERIALIZED VIEW m_agg",
        "MATERIALIZED VIEW m_join",
        "MATERIALIZED VIEW m_left",
        "MATERIALIZED VIEW m_top",
        "MATERIALIZED VIEW m_global",
        "MATERIALIZED VIEW m_on_mv",
    ];
    for i in 0..40 {
        let t = targets[rng.gen_range(0..targets.len())];
        let p = match i % 5 {
            0 => "1".to_string(),
            1 => "ADAPTIVE".to_string(),
            _ => rng.gen_range(1..=4).to_string(),
        };
        sql(&*s, &format!("ALTER {t} SET PARALLELISM = {p}")).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.await.unwrap();
    assert!(writes > 0);
    sql(&*s, "FLUSH").await;
    for (name, q) in mvs {
        assert_eq!(
            sql(&*s, &format!("SELECT * FROM {name}")).await,
            sql(&*s, q).await,
            "{name}"
        );
    }
    assert_eq!(
        sql(&*s, "SELECT * FROM m_on_mv").await,
        sql(&*s, "SELECT k, count(*) * 2 FROM a GROUP BY k").await
    );
    let history = sql(
        &*s,
        "SELECT count(*) FROM rw_scale_history WHERE status = 'succeeded'",
    )
    .await;
    assert_ne!(history, vec!["0".to_string()]);
}
