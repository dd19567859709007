//! Protocol fuzzing against the real server: thousands of random and
//! truncated frames from raw sockets, at every protocol state (the first
//! packet, after startup, in the middle of an extended-query exchange, in
//! COPY FROM STDIN).
//!
//! What must hold: every bad connection ends (the server never waits on
//! it forever), the server logs at most one line per bad connection and
//! never a panic or backtrace, a session opened before the fuzzing is
//! still open and answers afterwards, and a new client connects.
//!
//! `EBBFLOW_FUZZ_SEED` replays a run; `EBBFLOW_FUZZ_ROUNDS` scales it.

mod common;

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_postgres::NoTls;

use common::{EbbflowServer, ServerOptions};

/// The protocol state a bad connection is in when the garbage comes.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Garbage instead of (or inside) the startup packet.
    Startup,
    /// After a complete startup (ReadyForQuery seen).
    Ready,
    /// After Parse and Bind, before Sync.
    MidExtended,
    /// In COPY FROM STDIN (CopyInResponse seen).
    CopyIn,
}

fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

fn frame(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut msg = vec![ty];
    msg.extend(((body.len() + 4) as i32).to_be_bytes());
    msg.extend(body);
    msg
}

fn startup_packet() -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for s in ["user", "fuzz", "database", "dev", ""] {
        body.extend(cstr(s));
    }
    let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    msg.extend(body);
    msg
}

/// Well-formed messages of the extended protocol, to truncate and mutate.
fn valid_messages() -> Vec<Vec<u8>> {
    let mut parse = cstr("s1");
    parse.extend(cstr("select $1::int + 1"));
    parse.extend(1i16.to_be_bytes());
    parse.extend(23i32.to_be_bytes());
    let mut bind = cstr("");
    bind.extend(cstr("s1"));
    bind.extend(1i16.to_be_bytes());
    bind.extend(0i16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    bind.extend(1i32.to_be_bytes());
    bind.extend(b"7");
    bind.extend(1i16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    let mut describe = vec![b'S'];
    describe.extend(cstr("s1"));
    let mut execute = cstr("");
    execute.extend(0i32.to_be_bytes());
    let mut close = vec![b'P'];
    close.extend(cstr(""));
    vec![
        frame(b'P', &parse),
        frame(b'B', &bind),
        frame(b'D', &describe),
        frame(b'E', &execute),
        frame(b'C', &close),
        frame(b'Q', &cstr("select 1")),
        frame(b'd', b"1\t2\n"),
        frame(b'c', &[]),
        frame(b'f', &cstr("no")),
        frame(b'H', &[]),
        frame(b'p', &cstr("secret")),
        frame(b'F', &[0, 0, 0, 1, 0, 0]),
    ]
}

/// One piece of garbage for `state`.
fn garbage(rng: &mut SmallRng, state: State, valid: &[Vec<u8>]) -> Vec<u8> {
    let random = |rng: &mut SmallRng, n: usize| (0..n).map(|_| rng.gen()).collect::<Vec<u8>>();
    match rng.gen_range(0..5) {
        // Pure noise.
        0 => {
            let n = rng.gen_range(1..64);
            random(rng, n)
        }
        // A real message cut short, its length kept.
        1 => {
            let msg = if matches!(state, State::Startup) {
                startup_packet()
            } else {
                valid[rng.gen_range(0..valid.len())].clone()
            };
            let cut = rng.gen_range(1..msg.len());
            msg[..cut].to_vec()
        }
        // A real message with its length field rewritten to agree with a
        // shorter body (the decoders' body checks), or with a lie.
        2 => {
            let mut msg = if matches!(state, State::Startup) {
                startup_packet()
            } else {
                valid[rng.gen_range(0..valid.len())].clone()
            };
            let at = if matches!(state, State::Startup) {
                0
            } else {
                1
            };
            let keep = rng.gen_range(at + 4..=msg.len());
            msg.truncate(keep);
            let len = match rng.gen_range(0..4) {
                0 => (keep - at) as i32,
                1 => rng.gen_range(-8..8),
                2 => i32::MAX,
                _ => rng.gen_range(0..64),
            };
            msg[at..at + 4].copy_from_slice(&len.to_be_bytes());
            msg
        }
        // A real message with a few bytes flipped.
        3 => {
            let mut msg = valid[rng.gen_range(0..valid.len())].clone();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..msg.len());
                msg[i] = rng.gen();
            }
            msg
        }
        // A known type byte with a random body of a consistent length.
        _ => {
            let ty = b"PBDECQdcfHpFSX?\0"[rng.gen_range(0..16)];
            let n = rng.gen_range(0..48);
            frame(ty, &random(rng, n))
        }
    }
}

/// Read until the server closes, or `limit` passes. Returns whether it
/// closed and every byte received.
async fn drain(socket: &mut TcpStream, limit: Duration) -> (bool, Vec<u8>) {
    let mut all = vec![];
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    };
    let closed = tokio::time::timeout(limit, read).await.is_ok();
    (closed, all)
}

/// Wait for ReadyForQuery after a startup packet.
async fn until_ready(socket: &mut TcpStream) -> Result<(), String> {
    until_type(socket, b'Z').await
}

/// Read messages until one of type `want`.
async fn until_type(socket: &mut TcpStream, want: u8) -> Result<(), String> {
    let wait = async {
        loop {
            let ty = socket.read_u8().await.map_err(|e| e.to_string())?;
            let len = socket.read_i32().await.map_err(|e| e.to_string())?;
            let mut body = vec![0; (len as usize).saturating_sub(4)];
            socket
                .read_exact(&mut body)
                .await
                .map_err(|e| e.to_string())?;
            if ty == want {
                return Ok(());
            }
            if ty == b'E' {
                return Err(format!("error while waiting for {}", want as char));
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .map_err(|_| format!("no {} message", want as char))?
}

/// One bad connection: reach `state`, send garbage, half-close, and wait
/// for the server to close.
async fn bad_connection(port: u16, state: State, seed: u64) -> Result<(), String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let valid = valid_messages();
    let mut socket = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    if !matches!(state, State::Startup) {
        socket
            .write_all(&startup_packet())
            .await
            .map_err(|e| e.to_string())?;
        until_ready(&mut socket).await?;
    }
    if matches!(state, State::CopyIn) {
        socket
            .write_all(&frame(b'Q', &cstr("copy fuzz_sink from stdin")))
            .await
            .map_err(|e| e.to_string())?;
        until_type(&mut socket, b'G').await?;
    }
    if matches!(state, State::MidExtended) {
        socket
            .write_all(&[valid[0].clone(), valid[1].clone()].concat())
            .await
            .map_err(|e| e.to_string())?;
    }
    for _ in 0..rng.gen_range(1..4) {
        let bytes = garbage(&mut rng, state, &valid);
        // The server may have hung up already.
        if socket.write_all(&bytes).await.is_err() {
            break;
        }
    }
    let _ = socket.shutdown().await;
    let (closed, _) = drain(&mut socket, Duration::from_secs(20)).await;
    if closed {
        Ok(())
    } else {
        Err(format!(
            "{state:?} seed {seed}: server kept the connection open"
        ))
    }
}

fn is_panic_or_backtrace(line: &str) -> bool {
    let t = line.trim_start();
    line.contains("panicked at")
        || line.contains("stack backtrace")
        || line.contains("RUST_BACKTRACE")
        || (t.starts_with("at ") && t.contains(".rs:"))
        || t.split_once(": ").is_some_and(|(n, rest)| {
            n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() && rest.contains("::")
        })
}

#[test]
fn random_and_truncated_frames_close_only_their_connection() {
    let mut opts = ServerOptions::default();
    // A panic would print its full backtrace: the check below would see it.
    opts.env.push(("RUST_BACKTRACE".into(), "1".into()));
    let server = EbbflowServer::start(&opts).expect("server starts");
    let port = server.port;
    let seed: u64 = std::env::var("EBBFLOW_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let rounds: u64 = std::env::var("EBBFLOW_FUZZ_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    eprintln!("pgwire fuzz: EBBFLOW_FUZZ_SEED={seed} EBBFLOW_FUZZ_ROUNDS={rounds}");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let config = format!("host=127.0.0.1 port={port} user=root dbname=dev");
        let (bystander, connection) = tokio_postgres::connect(&config, NoTls)
            .await
            .expect("bystander connects");
        let bystander_conn = tokio::spawn(connection);
        bystander
            .simple_query("create table fuzz_t (k int primary key, v varchar)")
            .await
            .expect("create table");
        // What bad connections in COPY may write to (garbage can end with
        // a valid CopyDone).
        bystander
            .simple_query("create table fuzz_sink (k int, v varchar)")
            .await
            .expect("create sink");
        let stmt = bystander
            .prepare("insert into fuzz_t values ($1, $2)")
            .await
            .expect("prepare");

        let states = [
            State::Startup,
            State::Ready,
            State::MidExtended,
            State::CopyIn,
        ];
        let per_batch = 150u64;
        let mut total = 0u64;
        for round in 0..rounds {
            // Batches stay under the log tail's 200 kept lines, so every
            // line a batch printed is checked.
            let mark = server.log.mark();
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..per_batch {
                let state = states[(i % states.len() as u64) as usize];
                let s = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(round * per_batch + i);
                tasks.spawn(bad_connection(port, state, s));
                if tasks.len() >= 16 {
                    if let Some(r) = tasks.join_next().await {
                        r.expect("task").unwrap_or_else(|e| panic!("{e}"));
                    }
                }
            }
            while let Some(r) = tasks.join_next().await {
                r.expect("task").unwrap_or_else(|e| panic!("{e}"));
            }
            total += per_batch;

            // The session opened before keeps working between batches.
            let k = round as i32;
            bystander
                .execute(&stmt, &[&k, &format!("round {round}")])
                .await
                .expect("bystander insert");

            tokio::time::sleep(Duration::from_millis(50)).await;
            let lines = server.log.since(mark);
            assert!(
                lines.len() as u64 <= per_batch,
                "{} log lines for {per_batch} bad connections (seed {seed}):\n{}",
                lines.len(),
                lines.join("\n")
            );
            if let Some(bad) = lines.iter().find(|l| is_panic_or_backtrace(l)) {
                panic!(
                    "the server logged a panic or backtrace (seed {seed}): {bad}\n{}",
                    lines.join("\n")
                );
            }
        }
        eprintln!("pgwire fuzz: {total} bad connections");

        // Afterwards: the old session and a new client both answer.
        bystander.simple_query("flush").await.expect("flush");
        let rows = bystander
            .query("select count(*) from fuzz_t", &[])
            .await
            .expect("bystander query");
        let n: i64 = rows[0].get(0);
        assert_eq!(n, rounds as i64);
        assert!(!bystander_conn.is_finished(), "the bystander was closed");
        let (fresh, connection) = tokio_postgres::connect(&config, NoTls)
            .await
            .expect("a new client connects");
        tokio::spawn(connection);
        let rows = fresh.query("select 1", &[]).await.expect("select 1");
        assert_eq!(rows.len(), 1);
    });
}

/// A truncated Bind (the message pgwire's decoder used to panic on) gets a
/// FATAL protocol_violation ErrorResponse before the server closes.
#[test]
fn truncated_bind_gets_a_protocol_error() {
    let server = EbbflowServer::start(&ServerOptions::default()).expect("server starts");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let mut socket = TcpStream::connect(("127.0.0.1", server.port))
            .await
            .expect("connect");
        socket.write_all(&startup_packet()).await.expect("startup");
        until_ready(&mut socket).await.expect("ready");
        // Says: one parameter format code, but the body ends.
        socket
            .write_all(&[b'B', 0, 0, 0, 7, 0, 0, 0xff])
            .await
            .expect("write");
        let (closed, bytes) = drain(&mut socket, Duration::from_secs(20)).await;
        assert!(closed, "server kept the connection open");
        assert_eq!(bytes.first(), Some(&b'E'), "{bytes:?}");
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("C08P01"), "{text}");
        assert!(text.contains("SFATAL"), "{text}");
    });
}
