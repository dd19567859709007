//! COPY against the real server through tokio-postgres (COPY started by
//! the extended protocol) and raw simple queries: FROM STDIN in text and
//! csv, all or nothing, errors with their SQLSTATE and line, TO STDOUT of
//! a table and of a query.

mod common;

use bytes::Bytes;
use futures::{SinkExt, TryStreamExt};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

use common::{EbbflowServer, ServerOptions};

async fn connect(port: u16) -> Client {
    let config = format!("host=127.0.0.1 port={port} user=root dbname=dev");
    let (client, connection) = tokio_postgres::connect(&config, NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

async fn copy_in(client: &Client, sql: &str, data: &str) -> Result<u64, tokio_postgres::Error> {
    let sink = client.copy_in(sql).await?;
    futures::pin_mut!(sink);
    sink.send(Bytes::from(data.to_owned())).await?;
    sink.finish().await
}

async fn copy_out(client: &Client, sql: &str) -> String {
    let stream = client.copy_out(sql).await.expect("copy out");
    let chunks: Vec<Bytes> = stream.try_collect().await.expect("copy out data");
    chunks
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

#[test]
fn copy_from_stdin_and_to_stdout() {
    let server = EbbflowServer::start(&ServerOptions::default()).expect("server starts");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let c = connect(server.port).await;
        c.batch_execute("create table t (k int primary key, v varchar, x double precision)")
            .await
            .expect("create");

        let n = copy_in(&c, "copy t from stdin", "1\tone\t1.5\n2\t\\N\t\\N\n3\ta\\tb\t-2\n")
            .await
            .expect("text copy");
        assert_eq!(n, 3);
        let n = copy_in(
            &c,
            "copy t (v, k) from stdin with (format csv, header)",
            "v,k\n\"x,\"\"y\"\"\",10\n,11\n\"\",12\n",
        )
        .await
        .expect("csv copy");
        assert_eq!(n, 3);

        // A bad value on line 3: nothing of that COPY is applied.
        let err = copy_in(&c, "copy t from stdin", "20\ta\t1\n21\tb\t2\n22\tc\tnope\n")
            .await
            .expect_err("bad value");
        let db = err.as_db_error().expect("db error");
        assert_eq!(db.code(), &SqlState::INVALID_TEXT_REPRESENTATION);
        assert!(db.detail().unwrap_or("").contains("line 3"), "{db:?}");
        // A wrong field count: 22P04.
        let err = copy_in(&c, "copy t from stdin", "30\ta\n")
            .await
            .expect_err("short line");
        assert_eq!(
            err.as_db_error().map(|d| d.code().clone()),
            Some(SqlState::BAD_COPY_FILE_FORMAT)
        );
        let err = copy_in(&c, "copy t from stdin (format csv)", "31,a,1,extra\n")
            .await
            .expect_err("long line");
        assert_eq!(
            err.as_db_error().map(|d| d.code().clone()),
            Some(SqlState::BAD_COPY_FILE_FORMAT)
        );

        c.batch_execute("flush").await.expect("flush");
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 6, "a failed COPY applied rows");

        let out = copy_out(&c, "copy (select k, v, x from t where k < 10 order by k) to stdout").await;
        assert_eq!(out, "1\tone\t1.5\n2\t\\N\t\\N\n3\ta\\tb\t-2\n");
        let out = copy_out(
            &c,
            "copy (select k, v from t where k >= 10 order by k) to stdout with (format csv, header)",
        )
        .await;
        assert_eq!(out, "k,v\n10,\"x,\"\"y\"\"\"\n11,\n12,\"\"\n");
        let out = copy_out(&c, "copy t (k) to stdout").await;
        let mut keys: Vec<&str> = out.lines().collect();
        keys.sort_unstable();
        assert_eq!(keys, ["1", "10", "11", "12", "2", "3"]);

        // Files are refused; the session goes on.
        let err = c
            .batch_execute("copy t from '/etc/passwd'")
            .await
            .expect_err("file");
        assert_eq!(
            err.as_db_error().map(|d| d.code().clone()),
            Some(SqlState::INSUFFICIENT_PRIVILEGE)
        );
        let err = c
            .batch_execute("copy t from stdin; select 1")
            .await
            .expect_err("copy not last");
        assert_eq!(
            err.as_db_error().map(|d| d.code().clone()),
            Some(SqlState::FEATURE_NOT_SUPPORTED)
        );
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 6);
    });
}
