//! Views survive a restart: they are persisted with the catalog (a
//! replaced view as replaced), and a view and a materialized view over it
//! work on the restarted server, which still knows the MV depends on the
//! view.
//! (The view behaviour itself is in `e2e_test/ddl/views.slt`.)

mod common;

use tokio_postgres::{Client, NoTls};

use common::{EbbflowServer, ServerOptions, TempDir};

async fn connect(port: u16) -> Client {
    let config = format!("host=127.0.0.1 port={port} user=root dbname=dev");
    let (client, connection) = tokio_postgres::connect(&config, NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

async fn keys(c: &Client, sql: &str) -> Vec<i32> {
    c.query(sql, &[])
        .await
        .expect(sql)
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn views_survive_a_restart() {
    let dir = TempDir::new("ebbflow-views").expect("temp dir");
    let opts = ServerOptions::default();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut server = EbbflowServer::start_in(&opts, dir.path()).expect("server starts");
    rt.block_on(async {
        let c = connect(server.port).await;
        c.batch_execute(
            "create table t (k int primary key, v varchar);
             insert into t values (1, 'a'), (2, 'b'), (3, 'c');
             create view big (key) as select k from t where k > 2;
             create or replace view big (key, val) as select k, v from t where k > 1;
             create materialized view big_count as select count(*)::int as n from big;
             flush",
        )
        .await
        .expect("setup");
        assert_eq!(keys(&c, "select key from big order by key").await, [2, 3]);
    });
    server.stop();

    let server = EbbflowServer::start_in(&opts, dir.path()).expect("server restarts");
    rt.block_on(async {
        let c = connect(server.port).await;
        assert_eq!(keys(&c, "select key from big order by key").await, [2, 3]);
        c.batch_execute("insert into t values (4, 'd'); flush")
            .await
            .expect("insert");
        assert_eq!(
            keys(&c, "select key from big order by key").await,
            [2, 3, 4]
        );
        assert_eq!(keys(&c, "select n from big_count").await, [3]);
        let kinds: Vec<String> = c
            .query(
                "select relkind::varchar from pg_class where relname = 'big'",
                &[],
            )
            .await
            .expect("pg_class")
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(kinds, ["v"]);
        for sql in ["drop table t", "drop view big"] {
            // The MV depends on the view it read, not only on the table.
            let err = c.batch_execute(sql).await.expect_err("depends");
            assert!(
                err.as_db_error()
                    .is_some_and(|e| e.code().code() == "2BP01"),
                "{sql}: {err:?}"
            );
        }
        assert_eq!(
            keys(&c, "select count(*)::int from big where val is not null").await,
            [3]
        );
    });
}
