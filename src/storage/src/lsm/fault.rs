//! Test faults: end the process abruptly at a chosen point of the write
//! path, as `kill -9` would there (`ALTER SYSTEM SET debug_crash_at`).

use std::sync::atomic::{AtomicU8, Ordering};

/// Where to crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CrashPoint {
    Never = 0,
    /// After an epoch's files are uploaded, before the version that
    /// references them is committed.
    AfterUpload = 1,
    /// After a compaction's outputs are uploaded, before the version that
    /// swaps them in is committed.
    InCompaction = 2,
}

static CRASH_AT: AtomicU8 = AtomicU8::new(0);

impl CrashPoint {
    pub fn parse(s: &str) -> Option<CrashPoint> {
        match s.to_ascii_lowercase().as_str() {
            "" | "off" | "never" => Some(CrashPoint::Never),
            "upload" => Some(CrashPoint::AfterUpload),
            "compaction" => Some(CrashPoint::InCompaction),
            _ => None,
        }
    }
}

pub fn set_crash_point(p: CrashPoint) {
    CRASH_AT.store(p as u8, Ordering::SeqCst);
}

/// Ends the process here if `p` is the armed crash point.
pub fn crash_point(p: CrashPoint) {
    if p != CrashPoint::Never && CRASH_AT.load(Ordering::SeqCst) == p as u8 {
        eprintln!("ebbflow: crashing at {p:?} (debug_crash_at)");
        std::process::abort();
    }
}
