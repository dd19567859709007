//! The remote exchange: actor channels between processes.
//!
//! Between a sending process and a receiving one there is one gRPC stream
//! (`Exchange.Exchange`) that carries every actor pair between them, and
//! barriers once per stream instead of once per pair: a pair's barrier is
//! sent in full the first time an epoch crosses the stream and as a
//! reference to it after that.
//!
//! Back-pressure is per pair, by credits counted in rows: the sender holds
//! [`CREDIT_ROWS_PER_PAIR`] credits per pair and spends one per row of a
//! chunk (as the local channels do, see [`ebbflow_stream::channel`]; a
//! barrier takes none); the receiver queues a message without waiting and
//! returns its credits once the message is in the actor's channel. So a slow actor bounds what waits
//! for it and never stops the stream (HTTP/2's own flow control never
//! fills up behind it, which would stall every other pair of the
//! connection).
//!
//! A stream that fails is not retried: its pairs' channels close, the
//! actors on both sides fail and meta recovers the cluster from the last
//! committed epoch. Every stream is opened in a recovery generation and a
//! receiver refuses or ends streams of another one, so nothing sent before
//! a recovery reaches a rebuilt actor.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use tokio::sync::{mpsc, Semaphore};
use tonic::{Request, Response, Status, Streaming};

use super::pb::exchange_client::ExchangeClient;
use super::pb::exchange_frame::Body;
use super::pb::{Credit, CreditBatch, ExchangeBatch, ExchangeFrame};
use super::ClusterSecret;
use ebbflow_stream::channel::{self as row_channel, credits_of, Sender, CHANNEL_ROWS};
use ebbflow_stream::codec::{decode_message, encode_message};
use ebbflow_stream::message::{ActorId, Barrier, Message};

/// The upstream id of a source actor's own channel: meta sends DML and
/// barriers to a compute process as the pair (`INJECT`, source actor).
pub const INJECT: ActorId = ActorId::MAX;

/// Rows a sender may have in flight on the network per actor pair.
pub const CREDIT_ROWS_PER_PAIR: u32 = 4096;

/// Most frames in one gRPC message.
const MAX_BATCH: usize = 256;

/// The metadata entry naming the sender's recovery generation.
pub const GENERATION_HEADER: &str = "x-ebbflow-generation";

type Frame = (ActorId, ActorId, Message);

/// The sending side of a process: its streams to other processes.
pub struct ExchangeSender {
    secret: ClusterSecret,
    state: Mutex<SenderState>,
}

#[derive(Default)]
struct SenderState {
    generation: u64,
    streams: HashMap<String, Arc<OutStream>>,
}

impl ExchangeSender {
    pub fn new(secret: ClusterSecret) -> Arc<ExchangeSender> {
        Arc::new(ExchangeSender {
            secret,
            state: Mutex::default(),
        })
    }

    /// Close every stream and open new ones in `generation` from now on.
    pub fn reset(&self, generation: u64) {
        let mut st = self.state.lock();
        st.generation = generation;
        for (_, s) in st.streams.drain() {
            s.close();
        }
    }

    /// A channel from `up` to `down`, which runs on the process at
    /// `address`. `on_close` is told if the stream ends (once per stream).
    pub fn sender(
        &self,
        address: &str,
        up: ActorId,
        down: ActorId,
        on_close: Option<Arc<dyn Fn() + Send + Sync>>,
    ) -> Sender {
        let stream = {
            let mut st = self.state.lock();
            let generation = st.generation;
            let existing = st
                .streams
                .get(address)
                .filter(|s| !s.closed.load(Ordering::SeqCst))
                .cloned();
            match existing {
                Some(s) => s,
                None => {
                    let s = OutStream::open(address, self.secret.clone(), generation, on_close);
                    st.streams.insert(address.to_string(), s.clone());
                    s
                }
            }
        };
        stream.pair(up, down)
    }
}

/// One stream to another process.
struct OutStream {
    frames: mpsc::UnboundedSender<Frame>,
    credits: Mutex<HashMap<(ActorId, ActorId), Arc<Semaphore>>>,
    closed: AtomicBool,
    /// Set by [`Self::close`]: the stream ends.
    closing: tokio::sync::watch::Sender<bool>,
}

impl OutStream {
    fn open(
        address: &str,
        secret: ClusterSecret,
        generation: u64,
        on_close: Option<Arc<dyn Fn() + Send + Sync>>,
    ) -> Arc<OutStream> {
        let (frames, rx) = mpsc::unbounded_channel();
        let out = Arc::new(OutStream {
            frames,
            credits: Mutex::default(),
            closed: AtomicBool::new(false),
            closing: tokio::sync::watch::Sender::new(false),
        });
        let address = address.to_string();
        let me = out.clone();
        tokio::spawn(async move {
            let result = me.run(&address, secret, generation, rx).await;
            // Closed by a reset: an expected end.
            let expected = me.closed.load(Ordering::SeqCst);
            me.close();
            if let (Err(e), false) = (result, expected) {
                tracing::warn!(peer = %address, error = %e, "exchange stream failed");
                if let Some(f) = on_close {
                    f();
                }
            }
        });
        out
    }

    async fn run(
        &self,
        address: &str,
        secret: ClusterSecret,
        generation: u64,
        rx: mpsc::UnboundedReceiver<Frame>,
    ) -> Result<(), String> {
        let channel = super::channel(address).map_err(|e| e.to_string())?;
        let mut client = ExchangeClient::with_interceptor(channel, secret);
        let mut request = Request::new(batches(rx));
        let value = generation
            .to_string()
            .parse()
            .map_err(|e| format!("bad generation: {e}"))?;
        request.metadata_mut().insert(GENERATION_HEADER, value);
        let mut closing = self.closing.subscribe();
        let mut credits = tokio::select! {
            r = client.exchange(request) => r.map_err(|s| s.message().to_string())?.into_inner(),
            _ = closing.wait_for(|c| *c) => return Ok(()),
        };
        loop {
            let next = tokio::select! {
                m = credits.message() => m,
                _ = closing.wait_for(|c| *c) => return Ok(()),
            };
            match next {
                Ok(Some(batch)) => {
                    let sems = self.credits.lock();
                    for c in batch.credits {
                        if let Some(s) = sems.get(&(c.up, c.down)) {
                            s.add_permits(c.rows as usize);
                        }
                    }
                }
                Ok(None) => return Err("the receiver ended the stream".into()),
                Err(s) => return Err(s.message().to_string()),
            }
        }
    }

    /// Stop sending: every pair's forwarder ends, so its actor's next send
    /// fails.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.closing.send_replace(true);
        for s in self.credits.lock().values() {
            s.close();
        }
    }

    fn pair(self: &Arc<Self>, up: ActorId, down: ActorId) -> Sender {
        let (tx, mut rx) = row_channel::channel(CHANNEL_ROWS);
        let sem = Arc::new(Semaphore::new(CREDIT_ROWS_PER_PAIR as usize));
        if self.closed.load(Ordering::SeqCst) {
            sem.close();
        }
        self.credits.lock().insert((up, down), sem.clone());
        let frames = self.frames.clone();
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                let n = credits_of(&m, CREDIT_ROWS_PER_PAIR);
                if n > 0 {
                    match sem.acquire_many(n).await {
                        Ok(p) => p.forget(),
                        Err(_) => break,
                    }
                }
                if frames.send((up, down, m)).is_err() {
                    break;
                }
            }
        });
        tx
    }
}

/// The request stream: frames batched as they come, each barrier in full
/// once per epoch.
fn batches(
    mut rx: mpsc::UnboundedReceiver<Frame>,
) -> impl Stream<Item = ExchangeBatch> + Send + 'static {
    let mut last_barrier: Option<u64> = None;
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
        .ready_chunks(MAX_BATCH)
        .map(move |items| ExchangeBatch {
            frames: items
                .into_iter()
                .map(|(up, down, m)| {
                    let body = match &m {
                        Message::Barrier(b) if last_barrier == Some(b.epoch.curr) => {
                            Body::BarrierEpoch(b.epoch.curr)
                        }
                        _ => {
                            if let Message::Barrier(b) = &m {
                                last_barrier = Some(b.epoch.curr);
                            }
                            Body::Message(encode_message(&m))
                        }
                    };
                    ExchangeFrame {
                        up,
                        down,
                        body: Some(body),
                    }
                })
                .collect(),
        })
}

/// Where a receiving process delivers what arrives.
pub trait Inbound: Send + Sync + 'static {
    /// The process's recovery generation.
    fn generation(&self) -> u64;
    /// The channel of the pair `up → down` in `generation` (`up` is
    /// [`INJECT`] for a source actor's own channel); `None` if there is
    /// none (a stale generation, an actor that is gone).
    fn channel(&self, generation: u64, up: ActorId, down: ActorId) -> Option<Sender>;
}

/// The `Exchange` service of a process.
pub struct ExchangeService<T> {
    pub target: Arc<T>,
}

type CreditStream = Pin<Box<dyn Stream<Item = Result<CreditBatch, Status>> + Send>>;

#[tonic::async_trait]
impl<T: Inbound> super::pb::exchange_server::Exchange for ExchangeService<T> {
    type ExchangeStream = CreditStream;

    async fn exchange(
        &self,
        request: Request<Streaming<ExchangeBatch>>,
    ) -> Result<Response<CreditStream>, Status> {
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown peer".to_owned(), |a| a.to_string());
        let generation = request
            .metadata()
            .get(GENERATION_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| Status::invalid_argument("no recovery generation"))?;
        let current = self.target.generation();
        if generation != current {
            return Err(Status::failed_precondition(format!(
                "stream of recovery generation {generation}, this process is in {current}"
            )));
        }
        let inbound = request.into_inner();
        let (credit_tx, mut credit_rx) = mpsc::unbounded_channel::<Credit>();
        let target = self.target.clone();
        tokio::spawn(async move {
            if let Err(e) = receive(inbound, target, generation, credit_tx).await {
                tracing::debug!(%peer, error = %e, "exchange stream ended");
            }
        });
        let credits = futures::stream::poll_fn(move |cx| credit_rx.poll_recv(cx))
            .ready_chunks(MAX_BATCH)
            .map(|cs| {
                Ok(CreditBatch {
                    credits: merge_credits(cs),
                })
            });
        Ok(Response::new(Box::pin(credits)))
    }
}

/// Credits of the same pair summed.
fn merge_credits(cs: Vec<Credit>) -> Vec<Credit> {
    let mut out: Vec<Credit> = Vec::new();
    for c in cs {
        match out.iter_mut().find(|o| o.up == c.up && o.down == c.down) {
            Some(o) => o.rows += c.rows,
            None => out.push(c),
        }
    }
    out
}

/// Reads one stream until it ends, handing each pair's messages to a
/// deliverer that puts them into the actor's channel and returns credits.
async fn receive<T: Inbound>(
    mut inbound: Streaming<ExchangeBatch>,
    target: Arc<T>,
    generation: u64,
    credits: mpsc::UnboundedSender<Credit>,
) -> Result<(), String> {
    let mut pairs: HashMap<(ActorId, ActorId), mpsc::UnboundedSender<Message>> = HashMap::new();
    let mut last_barrier: Option<Barrier> = None;
    loop {
        let batch = match inbound.message().await {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(()),
            Err(s) => return Err(s.message().to_string()),
        };
        if target.generation() != generation {
            return Ok(());
        }
        for f in batch.frames {
            let msg = match f.body {
                Some(Body::Message(bytes)) => {
                    let m = decode_message(&bytes).map_err(|e| e.to_string())?;
                    if let Message::Barrier(b) = &m {
                        last_barrier = Some(b.clone());
                    }
                    m
                }
                Some(Body::BarrierEpoch(epoch)) => match &last_barrier {
                    Some(b) if b.epoch.curr == epoch => Message::Barrier(b.clone()),
                    _ => return Err(format!("reference to unknown barrier {epoch}")),
                },
                None => return Err("empty frame".into()),
            };
            let tx = match pairs.entry((f.up, f.down)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let Some(out) = target.channel(generation, f.up, f.down) else {
                        tracing::debug!(
                            up = f.up,
                            down = f.down,
                            "message for an unknown pair dropped"
                        );
                        continue;
                    };
                    v.insert(deliverer(f.up, f.down, out, credits.clone()))
                }
            };
            let _ = tx.send(msg);
        }
    }
}

fn deliverer(
    up: ActorId,
    down: ActorId,
    out: Sender,
    credits: mpsc::UnboundedSender<Credit>,
) -> mpsc::UnboundedSender<Message> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            let rows = credits_of(&m, CREDIT_ROWS_PER_PAIR);
            if out.send(m).await.is_err() {
                break;
            }
            if rows > 0 {
                let _ = credits.send(Credit { up, down, rows });
            }
        }
    });
    tx
}
