//! Tests that run the store in a child process and kill it, and the
//! micro-benchmark.

use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::contract::{key, put};
use super::tests::{all, dir_size, small, TempDir};
use super::*;

/// The child half of `crash_recovery_under_kill_9`: commits forever, each
/// epoch rewriting every key with its number and deleting an epoch-parity
/// key, and prints each epoch once `commit` returned.
#[test]
#[ignore = "run by crash_recovery_under_kill_9 in a child process"]
fn crash_child() {
    let Some(dir) = std::env::var_os("EBBFLOW_DURABLE_CRASH_DIR") else {
        return;
    };
    let s = DurableStateStore::open_with(Path::new(&dir), small()).unwrap();
    let mut e = s.committed_epoch();
    loop {
        e += 1;
        let mut writes: Vec<KeyedWrite> = (0..200)
            .map(|i| put(1, (i % 8) as u16, &format!("{i:04}"), &format!("{e:08}")))
            .collect();
        writes.push(put(2, 0, &format!("{}", e % 2), &format!("{e:08}")));
        writes.push((key(2, 0, &format!("{}", (e + 1) % 2)), None));
        // delete_table is committed at once, ahead of the epoch's commit.
        if e.is_multiple_of(5) {
            s.delete_table(3).unwrap();
        }
        writes.push(put(3, 0, &format!("{e:08}"), "x"));
        s.ingest(e, writes).unwrap();
        s.commit(e).unwrap();
        println!("committed {e}");
    }
}

/// Kills a committing child process with SIGKILL at random moments and
/// checks after each kill that the store reopens exactly at a committed
/// epoch: whole epochs only, and nothing acknowledged is lost.
#[test]
fn crash_recovery_under_kill_9() {
    let dir = TempDir::new("crash");
    let exe = std::env::current_exe().unwrap();
    let mut rng = SmallRng::seed_from_u64(2024);
    let mut last_acked = 0u64;
    for round in 0..8 {
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "storage::durable::crash_tests::crash_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("EBBFLOW_DURABLE_CRASH_DIR", &dir.0)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the child committed at least once, then kill it at a
        // random moment.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(e) = line.strip_prefix("committed ") {
                    let _ = tx.send(e.parse::<u64>().unwrap());
                }
            }
        });
        let first = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("child commits");
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..300)));
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let acked = rx.try_iter().last().unwrap_or(first);
        assert!(acked > last_acked);

        let s = DurableStateStore::open_with(&dir.0, small()).unwrap();
        let e = s.committed_epoch();
        println!("round {round}: child acknowledged epoch {acked}, reopened at {e}");
        assert!(e == acked || e == acked + 1, "acked {acked}, recovered {e}");
        let want = format!("{e:08}");
        let t1 = s.scan(prefix_range(&table_prefix(1)), false).unwrap();
        assert_eq!(t1.len(), 200);
        assert!(t1.iter().all(|(_, v)| *v == want.as_bytes()), "torn epoch");
        let t2 = s.scan(prefix_range(&table_prefix(2)), false).unwrap();
        assert_eq!(
            t2,
            vec![(key(2, 0, &format!("{}", e % 2)), Bytes::from(want))]
        );
        let t3 = s.scan(prefix_range(&table_prefix(3)), false).unwrap();
        let since_delete = if e < 5 { e } else { e % 5 + 1 };
        // Killed between the next epoch's delete_table and its commit?
        let deleted_ahead = (e + 1).is_multiple_of(5) && t3.is_empty();
        assert!(
            t3.len() as u64 == since_delete || deleted_ahead,
            "epoch {e}: {t3:?}"
        );
        last_acked = e;
    }
}

/// `cargo test --release --lib storage::durable::crash_tests::bench -- --ignored --nocapture`
#[test]
#[ignore = "micro-benchmark"]
fn bench() {
    let dir = TempDir::new("bench");
    let s = DurableStateStore::open(&dir.0).unwrap();
    const KEYS: u64 = 1_000_000;
    const COMMITS: u64 = 100;
    let mut rng = SmallRng::seed_from_u64(1);
    let start = Instant::now();
    for e in 1..=COMMITS {
        let writes = (0..KEYS / COMMITS)
            .map(|_| {
                let mut k = vec![0, 0, 0, 1];
                k.extend_from_slice(&rng.gen::<[u8; 12]>());
                (
                    Bytes::from(k),
                    Some(Bytes::from(rng.gen::<[u8; 32]>().to_vec())),
                )
            })
            .collect();
        s.ingest(e, writes).unwrap();
        s.commit(e).unwrap();
    }
    let write = start.elapsed();
    let probe: Vec<Bytes> = (0..100_000u32)
        .map(|i| {
            let mut k = vec![0, 0, 0, 1];
            k.extend_from_slice(&i.to_be_bytes());
            Bytes::from(k)
        })
        .collect();
    let start = Instant::now();
    for k in &probe {
        std::hint::black_box(s.get(k, false).unwrap());
    }
    let gets = start.elapsed();
    let start = Instant::now();
    let n = all(&s, false).len();
    let scan = start.elapsed();
    let size = dir_size(&dir.0);
    drop(s);
    let start = Instant::now();
    let s = DurableStateStore::open(&dir.0).unwrap();
    let reopen = start.elapsed();
    assert_eq!(s.committed_epoch(), COMMITS);
    println!(
        "{KEYS} keys (16 B + 32 B) in {COMMITS} durable commits: {:.0} keys/s ({write:?}); \
         100k point gets (misses) {gets:?}; full scan of {n} keys {scan:?}; \
         {size} B allocated on disk; reopen {reopen:?}",
        KEYS as f64 / write.as_secs_f64()
    );
    if let Some(keep) = std::env::var_os("EBBFLOW_BENCH_KEEP") {
        drop(s);
        std::fs::rename(&dir.0, keep).unwrap();
    }
}

/// Reopens the store in `$EBBFLOW_BENCH_DIR` (kept by `bench` with
/// `EBBFLOW_BENCH_KEEP`), to profile recovery.
#[test]
#[ignore = "profiling aid"]
fn reopen_only() {
    let Some(dir) = std::env::var_os("EBBFLOW_BENCH_DIR") else {
        return;
    };
    let start = Instant::now();
    let s = DurableStateStore::open(Path::new(&dir)).unwrap();
    println!(
        "reopen {:?} at epoch {}",
        start.elapsed(),
        s.committed_epoch()
    );
}
