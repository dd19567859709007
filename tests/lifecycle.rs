//! Server lifecycle (issue 2, points 1 and 9): it prints where to connect,
//! survives clients that misbehave, and shuts down cleanly on SIGTERM.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{describe_pg_error, EbbflowServer, ServerOptions};

async fn check_query(conn_str: &str) -> Result<(), String> {
    let client = common::connect(conn_str)
        .await
        .map_err(|e| describe_pg_error(&e))?;
    let rows = client
        .simple_query("SELECT 1 + 1")
        .await
        .map_err(|e| describe_pg_error(&e))?;
    let value = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    });
    if value.as_deref() != Some("2") {
        return Err(format!("SELECT 1 + 1 returned {value:?}"));
    }
    Ok(())
}

#[test]
fn lifecycle() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut server = EbbflowServer::start(&ServerOptions::default())
        .unwrap_or_else(|e| panic!("ebbflow did not start: {e}"));
    let conn_str = server.conn_str();
    let addr = format!("127.0.0.1:{}", server.port);

    // The ready line says where to connect.
    assert!(
        server.log.tail(200).contains(&addr),
        "the `listening on` line should name {addr}:\n{}",
        server.log.tail(20)
    );

    rt.block_on(check_query(&conn_str))
        .unwrap_or_else(|e| panic!("first query: {e}\n{}", server.log.tail(30)));

    // Misbehaving clients: connect and leave, send garbage, send half a
    // startup packet and hang up, send an SSL request (must be refused
    // with 'N', not crash).
    drop(TcpStream::connect(&addr).expect("connect"));
    {
        let mut s = TcpStream::connect(&addr).expect("connect");
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut buf = [0u8; 64];
        let _ = s.read(&mut buf);
    }
    {
        let mut s = TcpStream::connect(&addr).expect("connect");
        let _ = s.write_all(&[0, 0, 0, 40, 0, 3]);
    }
    {
        let mut s = TcpStream::connect(&addr).expect("connect");
        // SSLRequest: length 8, code 80877103.
        let _ = s.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]);
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let mut buf = [0u8; 1];
        if s.read_exact(&mut buf).is_ok() {
            assert_eq!(buf[0], b'N', "SSL must be refused with 'N'");
        }
    }
    // A client that disconnects in the middle of a session.
    rt.block_on(async {
        let client = common::connect(&conn_str).await.expect("connect");
        let _ = client.simple_query("CREATE TABLE t (a int)").await;
        drop(client);
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.is_running(), "server died:\n{}", server.log.tail(30));
    rt.block_on(check_query(&conn_str))
        .unwrap_or_else(|e| panic!("query after bad clients: {e}\n{}", server.log.tail(30)));

    // Several sessions at once.
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let c = conn_str.clone();
            tasks.push(tokio::spawn(async move { check_query(&c).await }));
        }
        for t in tasks {
            t.await.expect("join").expect("concurrent session");
        }
    });

    // SIGTERM: a clean exit, in time.
    let status = server.terminate(Duration::from_secs(15));
    match status {
        Some(s) => assert!(
            s.success() || s.code() == Some(130) || s.code() == Some(143),
            "ebbflow exited with {s} on SIGTERM:\n{}",
            server.log.tail(30)
        ),
        None => panic!(
            "ebbflow did not exit within 15 s of SIGTERM:\n{}",
            server.log.tail(30)
        ),
    }
}
