//! The connectors' generators and the reader a source actor runs (the
//! connectors' descriptions and options are `plan::source`).
//!
//! A connector's stream is cut into **splits**: split `s` of `n` holds the
//! stream's elements `s, s + n, s + 2n, …`, each a function of its
//! position, so a split resumes exactly from a count. Split `s` lives on
//! vnode `s · 256 / n`: the actor owning that vnode reads the split, and
//! the split's progress is a row of the source's state table under that
//! vnode. Scaling a source fragment therefore moves splits like any other
//! vnode-keyed state: the new owner reads the count its predecessor
//! committed at the scale barrier.

pub mod datagen;
pub mod nexmark;

use tokio::time::{Duration, Instant};

use crate::executor::watermark_filter::drop_late;
use crate::message::Watermark;
use ebbflow_common::TableId;
use ebbflow_common::{Bitmap, DataType, Op, ScalarValue, StreamChunk};
use ebbflow_plan::source::{split_vnode, Connector, DatagenDesc, SplitSourceDesc};
use ebbflow_storage::state_table::Committed;
use ebbflow_storage::{StateTable, StorageResult};

/// A watermark as a number: microseconds of a timestamp, days of a date.
fn watermark_to_i64(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Timestamp(t) => Some(t.and_utc().timestamp_micros()),
        ScalarValue::Timestamptz(t) => Some(*t),
        ScalarValue::Date(d) => Some(
            d.signed_duration_since(chrono::NaiveDate::default())
                .num_days(),
        ),
        other => other.as_i64(),
    }
}

fn watermark_from_i64(ty: DataType, v: i64) -> Option<ScalarValue> {
    Some(match ty {
        DataType::Timestamp => {
            ScalarValue::Timestamp(chrono::DateTime::from_timestamp_micros(v)?.naive_utc())
        }
        DataType::Timestamptz => ScalarValue::Timestamptz(v),
        DataType::Date => ScalarValue::Date(
            chrono::NaiveDate::default().checked_add_signed(chrono::TimeDelta::try_days(v)?)?,
        ),
        DataType::Int16 => ScalarValue::Int16(i16::try_from(v).ok()?),
        DataType::Int32 => ScalarValue::Int32(i32::try_from(v).ok()?),
        DataType::Int64 => ScalarValue::Int64(v),
        _ => return None,
    })
}

/// How the progress of the reader's splits is kept.
enum Layout {
    /// One row per split under its vnode (see the module doc).
    Splits,
    /// A `datagen` table created before splits existed: one split, its
    /// offset alone under the empty key.
    Single,
}

/// One owned split.
struct Split {
    id: u32,
    /// Elements emitted (the position of the next one in the split).
    emitted: u64,
    done: bool,
    /// The split's announced watermark: its rows below it are late.
    watermark: Option<ScalarValue>,
    /// The highest watermark its rows set since the last barrier.
    highest: Option<ScalarValue>,
}

/// The generator of one source actor: the splits it owns and their
/// progress (committed with each epoch in `state`), the pacing, and the
/// throttle that keeps epochs from growing when the job is slower than the
/// source.
///
/// # Throttle
///
/// Meta runs one barrier at a time and commits its epoch before the next
/// one, and closing an epoch (flushing aggregates, committing to the
/// store) costs time in proportion to its rows. A source that generated
/// whatever downstream channels accepted would keep filling the next epoch
/// while the previous one is being closed; when the job is slower than the
/// source, each epoch would then be larger than the last and a barrier
/// (FLUSH, a scale) would wait seconds, then minutes. So while the epoch
/// this source closed last is not committed, it generates at most as many
/// rows into the current epoch as that one had (at least one batch); once
/// the commit is seen, pacing alone applies again. An epoch outgrows its
/// predecessor only by what the rate adds between a commit and the next
/// barrier, so epochs stop growing once closing one takes a barrier
/// interval. Only the timing of rows changes, never which rows belong to
/// which split position.
pub struct SourceReader {
    desc: SplitSourceDesc,
    layout: Layout,
    /// Progress rows, under the vnodes this actor owns.
    state: StateTable,
    splits: Vec<Split>,
    /// Round-robin position in `splits`.
    next: usize,
    /// The nexmark generator splits start from (built once).
    nexmark: Option<::nexmark::EventGenerator>,
    loaded: bool,
    paused: bool,
    /// Pacing origin: the instant and rows emitted the rate is measured from.
    started: Option<(Instant, u64)>,
    /// Rows emitted since the reader was built (pacing counts these).
    emitted: u64,
    /// Rows generated since the last barrier.
    epoch_rows: u64,
    /// Rows of the epoch closed by the last barrier.
    prev_epoch_rows: u64,
    /// The epoch closed by the last barrier, until it is seen committed.
    uncommitted: Option<u64>,
}

impl SourceReader {
    /// A reader of the splits whose vnodes `state` owns.
    pub fn new(desc: SplitSourceDesc, state: StateTable) -> Self {
        Self::with_layout(desc, state, Layout::Splits)
    }

    /// The reader of a `datagen` table created before splits existed.
    pub fn single(datagen: DatagenDesc, relation: TableId, state: StateTable) -> Self {
        let desc = SplitSourceDesc {
            watermark: None,
            connector: Connector::Datagen(datagen),
            splits: 1,
            relation,
        };
        Self::with_layout(desc, state, Layout::Single)
    }

    fn with_layout(desc: SplitSourceDesc, state: StateTable, layout: Layout) -> Self {
        let nexmark = match &desc.connector {
            Connector::Nexmark(n) => Some(nexmark::generator(n)),
            Connector::Datagen(_) => None,
        };
        SourceReader {
            desc,
            layout,
            state,
            splits: Vec::new(),
            next: 0,
            nexmark,
            loaded: false,
            paused: false,
            started: None,
            emitted: 0,
            epoch_rows: 0,
            prev_epoch_rows: 0,
            uncommitted: None,
        }
    }

    fn owned_splits(&self) -> Vec<u32> {
        match self.layout {
            Layout::Single => vec![0],
            Layout::Splits => (0..self.desc.splits)
                .filter(|&s| {
                    self.state
                        .vnodes()
                        .contains(split_vnode(s, self.desc.splits))
                })
                .collect(),
        }
    }

    /// Rows per second this actor generates: its share of the stream's
    /// (the splits it loaded; asked only while it is active).
    fn rate(&self) -> Option<f64> {
        let share = self.splits.len() as f64 / self.desc.splits.max(1) as f64;
        self.desc.rate().map(|r| (r * share).max(1.0))
    }

    fn batch_size(&self) -> u64 {
        let max = self.desc.max_chunk() as u64;
        match self.rate() {
            Some(r) => ((r / 20.0) as u64).clamp(1, max),
            None => max,
        }
    }

    /// Whether the throttle (see the type's doc) holds the generator back,
    /// given the last committed epoch. Once the awaited commit is seen,
    /// the pacing restarts from now: rows not generated while throttled
    /// are not made up for in a burst.
    pub fn throttled(&mut self, committed: u64) -> bool {
        let Some(epoch) = self.uncommitted else {
            return false;
        };
        if committed >= epoch {
            self.uncommitted = None;
            if self.epoch_rows >= self.quota() {
                self.started = None;
            }
            return false;
        }
        self.epoch_rows >= self.quota()
    }

    /// Rows the current epoch may have while the previous one is
    /// uncommitted.
    fn quota(&self) -> u64 {
        self.prev_epoch_rows.max(self.batch_size())
    }

    /// Read the progress of the owned splits (at the first barrier, and
    /// after a change of vnodes once the previous owners' epoch is
    /// committed).
    pub async fn load(&mut self) -> StorageResult<()> {
        if self.loaded {
            return Ok(());
        }
        self.loaded = true;
        self.splits.clear();
        self.next = 0;
        for id in self.owned_splits() {
            let (emitted, done, watermark) = match self.layout {
                Layout::Single => {
                    let row = self.state.get(&[]).await?;
                    let n = row.and_then(|r| r.first().cloned().flatten()?.as_i64());
                    (n.unwrap_or(0) as u64, false, None)
                }
                Layout::Splits => {
                    let vnode = split_vnode(id, self.desc.splits);
                    let key = [Some(ScalarValue::Int32(id as i32))];
                    match self.state.get_at(vnode, &key).await? {
                        Some(row) => (
                            row.get(1)
                                .cloned()
                                .flatten()
                                .and_then(|v| v.as_i64())
                                .unwrap_or(0) as u64,
                            matches!(row.get(2), Some(Some(ScalarValue::Boolean(true)))),
                            row.get(3)
                                .cloned()
                                .flatten()
                                .and_then(|v| v.as_i64())
                                .and_then(|v| self.watermark_value(v)),
                        ),
                        None => (0, false, None),
                    }
                }
            };
            self.splits.push(Split {
                id,
                emitted,
                done,
                watermark,
                highest: None,
            });
        }
        Ok(())
    }

    fn watermark_value(&self, v: i64) -> Option<ScalarValue> {
        let wm = self.desc.watermark.as_ref()?;
        watermark_from_i64(wm.expr.return_type(), v)
    }

    /// The watermarks of the rows this actor emits after the barrier just
    /// committed: the least of its splits still running (each split keeps
    /// its own, so a split that lags behind holds the watermark back
    /// instead of losing its rows as late). An actor with no split
    /// running sends no more rows: it gives the highest watermark any
    /// split reached, so that it holds nothing back.
    pub async fn watermarks(&self) -> StorageResult<Vec<Watermark>> {
        let Some(wm) = &self.desc.watermark else {
            return Ok(Vec::new());
        };
        let running: Vec<&Split> = self.splits.iter().filter(|s| !s.done).collect();
        let value = if running.is_empty() {
            let mut highest: Option<ScalarValue> = None;
            for (_, row) in self.state.scan_all_vnodes().await? {
                let v = row.get(3).cloned().flatten().and_then(|v| v.as_i64());
                if let Some(v) = v.and_then(|v| self.watermark_value(v)) {
                    if highest.as_ref().is_none_or(|h| v > *h) {
                        highest = Some(v);
                    }
                }
            }
            highest
        } else {
            running
                .iter()
                .map(|s| s.watermark.clone())
                .try_fold(None::<ScalarValue>, |least, w| {
                    let w = w?;
                    Some(Some(match least {
                        Some(l) if l <= w => l,
                        _ => w,
                    }))
                })
                .flatten()
        };
        Ok(value
            .map(|v| vec![Watermark::new(wm.column, v)])
            .unwrap_or_default())
    }

    /// A new set of vnodes (a scale barrier): the splits are read again
    /// by the next [`SourceReader::load`].
    pub fn update_vnodes(&mut self, vnodes: Bitmap) {
        let _ = self.state.update_vnodes(vnodes);
        self.loaded = false;
        self.started = None;
    }

    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
        self.started = None;
    }

    pub fn is_active(&self) -> bool {
        self.loaded && !self.paused && self.splits.iter().any(|s| !s.done)
    }

    /// When the next chunk is due, at the reader's rate.
    pub fn next_due(&mut self) -> Instant {
        let now = Instant::now();
        let Some(rate) = self.rate() else {
            return now;
        };
        let (t0, e0) = *self.started.get_or_insert((now, self.emitted));
        t0 + Duration::from_secs_f64((self.emitted - e0) as f64 / rate)
    }

    /// Generate the next chunk (called when due and active): a batch of
    /// the next split in turn that has not ended.
    pub fn next_chunk(&mut self) -> StreamChunk {
        let batch = self.batch_size() as usize;
        for _ in 0..self.splits.len() {
            let i = self.next % self.splits.len();
            self.next = (i + 1) % self.splits.len();
            if self.splits[i].done {
                continue;
            }
            let (chunk, done) = self.generate(i, batch);
            let n = chunk.len() as u64;
            let split = &mut self.splits[i];
            let chunk = match &self.desc.watermark {
                Some(wm) => drop_late(chunk, wm, &split.watermark, &mut split.highest, 0),
                None => chunk,
            };
            split.emitted += n;
            split.done = done;
            self.epoch_rows += n;
            self.emitted += n;
            if n > 0 {
                return chunk;
            }
        }
        StreamChunk::default()
    }

    /// Up to `max` rows of split `i`, and whether it ended.
    fn generate(&self, i: usize, max: usize) -> (StreamChunk, bool) {
        let split = &self.splits[i];
        let (s, n) = (split.id as u64, self.desc.splits.max(1) as u64);
        match &self.desc.connector {
            Connector::Datagen(d) => {
                let total = d.total_rows();
                let offsets: Vec<u64> = (split.emitted..)
                    .map(|k| s + k * n)
                    .take_while(|&o| total.is_none_or(|t| o < t))
                    .take(max)
                    .collect();
                let next = s + (split.emitted + offsets.len() as u64) * n;
                let done = total.is_some_and(|t| next >= t);
                let ops = vec![Op::Insert; offsets.len()];
                (
                    StreamChunk::new(ops, datagen::columns(d, &offsets), None),
                    done,
                )
            }
            Connector::Nexmark(d) => match &self.nexmark {
                Some(g) => nexmark::rows(d, g, s, n, split.emitted, max),
                None => (StreamChunk::default(), true),
            },
        }
    }

    /// Save the splits' progress at the epoch the barrier closes; `next`
    /// is the epoch it opens.
    pub fn commit(&mut self, epoch: u64, next: u64) -> StorageResult<Committed> {
        for split in &mut self.splits {
            if let Some(h) = split.highest.take() {
                if split.watermark.as_ref().is_none_or(|w| h > *w) {
                    split.watermark = Some(h);
                }
            }
        }
        for split in &self.splits {
            match self.layout {
                Layout::Single => self
                    .state
                    .put(&[], &[Some(ScalarValue::Int64(split.emitted as i64))]),
                Layout::Splits => self.state.put_at(
                    split_vnode(split.id, self.desc.splits),
                    &[Some(ScalarValue::Int32(split.id as i32))],
                    &[
                        Some(ScalarValue::Int32(split.id as i32)),
                        Some(ScalarValue::Int64(split.emitted as i64)),
                        Some(ScalarValue::Boolean(split.done)),
                        split
                            .watermark
                            .as_ref()
                            .and_then(watermark_to_i64)
                            .map(ScalarValue::Int64),
                    ],
                ),
            }
        }
        let committed = self.state.commit(epoch, next)?;
        self.prev_epoch_rows = std::mem::take(&mut self.epoch_rows);
        self.uncommitted = Some(epoch);
        Ok(committed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use ebbflow_common::{VirtualNode, VNODE_COUNT};
    use ebbflow_plan::source::datagen::FieldGen;
    use ebbflow_plan::source::progress_types;
    use ebbflow_storage::{MemoryStateStore, StateStore};

    fn state(store: &Arc<dyn StateStore>, vnodes: Bitmap) -> StateTable {
        StateTable::new(
            1,
            store.clone(),
            vec![DataType::Int32],
            vec![],
            vec![],
            ebbflow_storage::state_table::ValueCodec::Schema(progress_types()),
            vnodes,
        )
    }

    fn desc(rows_per_second: u64, end: Option<i64>, splits: u32) -> SplitSourceDesc {
        SplitSourceDesc {
            watermark: None,
            connector: Connector::Datagen(DatagenDesc {
                fields: vec![(DataType::Int64, FieldGen::Sequence { start: 0, end })],
                rows_per_second,
            }),
            splits,
            relation: 9,
        }
    }

    async fn reader(rows_per_second: u64) -> SourceReader {
        let store: Arc<dyn StateStore> = Arc::new(MemoryStateStore::new());
        let mut r = SourceReader::new(
            desc(rows_per_second, None, 1),
            state(&store, Bitmap::full()),
        );
        r.load().await.unwrap();
        r
    }

    #[tokio::test]
    async fn an_epoch_outgrows_an_uncommitted_one_only_after_its_commit() {
        let mut r = reader(20_000).await; // batches of 1000
        assert!(!r.throttled(0), "nothing to wait for before a barrier");
        for _ in 0..3 {
            r.next_chunk();
        }
        let _ = r.commit(5, 6).unwrap(); // epoch 5 has 3000 rows, not yet committed
        for _ in 0..3 {
            assert!(!r.throttled(4));
            r.next_chunk();
        }
        assert!(r.throttled(4), "as many rows as the uncommitted epoch");
        assert!(!r.throttled(5), "released by the commit");
        r.next_chunk();
        let _ = r.commit(6, 7).unwrap(); // 4000 rows
        for _ in 0..4 {
            assert!(!r.throttled(5));
            r.next_chunk();
        }
        assert!(r.throttled(5));
        // Positions are untouched by the throttle.
        assert_eq!(r.splits[0].emitted, 11_000);
    }

    #[tokio::test]
    async fn a_small_epoch_still_lets_one_batch_through() {
        let mut r = reader(100).await; // batches of 5
        let _ = r.commit(1, 2).unwrap(); // an empty epoch
        assert!(!r.throttled(0));
        r.next_chunk();
        assert!(r.throttled(0));
        assert!(!r.throttled(1));
    }

    /// Two actors, each owning half the vnodes, generate every row once;
    /// after a "scale" to one actor that resumes from the committed
    /// progress, the rest follows with no row twice.
    #[tokio::test]
    async fn splits_resume_on_a_new_owner() {
        let store: Arc<dyn StateStore> = Arc::new(MemoryStateStore::new());
        let half = |lo: bool| {
            Bitmap::from_vnodes((0..VNODE_COUNT as VirtualNode).filter(move |v| (*v < 128) == lo))
        };
        let d = desc(1_000_000, Some(9_999), 8);
        let mut a = SourceReader::new(d.clone(), state(&store, half(true)));
        let mut b = SourceReader::new(d.clone(), state(&store, half(false)));
        a.load().await.unwrap();
        b.load().await.unwrap();
        assert_eq!(a.splits.len(), 4);
        let mut seen = Vec::new();
        for _ in 0..3 {
            for r in [&mut a, &mut b] {
                seen.extend(r.next_chunk().rows().map(|(_, row)| row[0].clone()));
            }
        }
        let _ = a.commit(1, 2).unwrap();
        let _ = b.commit(1, 2).unwrap();
        let mut c = SourceReader::new(d, state(&store, Bitmap::full()));
        c.load().await.unwrap();
        while c.is_active() {
            seen.extend(c.next_chunk().rows().map(|(_, row)| row[0].clone()));
        }
        let mut seen: Vec<i64> = seen
            .into_iter()
            .map(|d| d.unwrap().as_i64().unwrap())
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..10_000).collect::<Vec<_>>());
    }
}
