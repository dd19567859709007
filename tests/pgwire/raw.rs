//! A bare-bones PostgreSQL frontend over a raw socket, for checking the
//! exact messages the server sends and for misbehaving on purpose.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A bare-bones frontend for checking exact messages.
pub struct RawClient {
    pub socket: TcpStream,
}

pub fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

impl RawClient {
    pub async fn connect(addr: SocketAddr) -> RawClient {
        let mut socket = TcpStream::connect(addr).await.unwrap();
        let mut body = 196_608i32.to_be_bytes().to_vec();
        for s in ["user", "raw", "database", "db", ""] {
            body.extend(cstr(s));
        }
        let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        msg.extend(body);
        socket.write_all(&msg).await.unwrap();
        let mut client = RawClient { socket };
        let startup = client.until_ready().await;
        let status: Vec<String> = startup
            .iter()
            .filter(|(t, _)| *t == b'S')
            .map(|(_, b)| String::from_utf8_lossy(b).replace('\0', "="))
            .collect();
        for expected in [
            "server_version=15.0 (ebbflow",
            "DateStyle=ISO, MDY=",
            "TimeZone=UTC=",
            "IntervalStyle=postgres=",
            "integer_datetimes=on=",
            "standard_conforming_strings=on=",
            "client_encoding=UTF8=",
            "server_encoding=UTF8=",
        ] {
            assert!(
                status.iter().any(|s| s.starts_with(expected)),
                "{expected} missing from {status:?}"
            );
        }
        assert!(startup.iter().any(|(t, _)| *t == b'K'));
        client
    }

    pub async fn send(&mut self, ty: u8, body: &[u8]) {
        let mut msg = vec![ty];
        msg.extend(((body.len() + 4) as i32).to_be_bytes());
        msg.extend(body);
        self.socket.write_all(&msg).await.unwrap();
    }

    pub async fn recv(&mut self) -> (u8, Vec<u8>) {
        let ty = self.socket.read_u8().await.unwrap();
        let len = self.socket.read_i32().await.unwrap();
        let mut body = vec![0; len as usize - 4];
        self.socket.read_exact(&mut body).await.unwrap();
        (ty, body)
    }

    pub async fn until_ready(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut out = vec![];
        loop {
            let msg = self.recv().await;
            let done = msg.0 == b'Z';
            out.push(msg);
            if done {
                return out;
            }
        }
    }

    /// The message types and, for CommandComplete and ErrorResponse, their
    /// tag or SQLSTATE, in order.
    pub async fn exchange(&mut self) -> Vec<String> {
        self.until_ready()
            .await
            .into_iter()
            .map(|(t, body)| match t {
                b'C' => format!("C {}", String::from_utf8_lossy(&body[..body.len() - 1])),
                b'E' => {
                    let code = body
                        .split(|b| *b == 0)
                        .find(|f| f.first() == Some(&b'C'))
                        .map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
                        .unwrap_or_default();
                    format!("E {code}")
                }
                t => (t as char).to_string(),
            })
            .collect()
    }

    pub async fn query(&mut self, sql: &str) -> Vec<String> {
        self.send(b'Q', &cstr(sql)).await;
        self.exchange().await
    }
}

pub fn parse_msg(name: &str, sql: &str, oids: &[u32]) -> Vec<u8> {
    let mut b = cstr(name);
    b.extend(cstr(sql));
    b.extend((oids.len() as i16).to_be_bytes());
    for o in oids {
        b.extend(o.to_be_bytes());
    }
    b
}

pub fn bind_msg(
    portal: &str,
    stmt: &str,
    params: &[(i16, Option<&[u8]>)],
    results: &[i16],
) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(cstr(stmt));
    b.extend((params.len() as i16).to_be_bytes());
    for (f, _) in params {
        b.extend(f.to_be_bytes());
    }
    b.extend((params.len() as i16).to_be_bytes());
    for (_, v) in params {
        match v {
            Some(v) => {
                b.extend((v.len() as i32).to_be_bytes());
                b.extend(*v);
            }
            None => b.extend((-1i32).to_be_bytes()),
        }
    }
    b.extend((results.len() as i16).to_be_bytes());
    for r in results {
        b.extend(r.to_be_bytes());
    }
    b
}

pub fn execute_msg(portal: &str, max_rows: i32) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(max_rows.to_be_bytes());
    b
}
