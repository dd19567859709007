//! Actor-to-actor channels bounded in rows: credit-based flow control.
//!
//! A channel holds [`CHANNEL_ROWS`] credits. Sending a chunk takes one
//! credit per visible row (at least one, at most all of them, so a chunk
//! larger than the channel still passes, alone); the receiver gives them
//! back when it takes the chunk. A barrier takes none: it never waits
//! behind credits, only behind the rows queued ahead of it, which the
//! credits bound. So what a barrier waits for in each channel is at most
//! about [`CHANNEL_ROWS`] rows of its receiver's work, whatever the size of
//! the chunks.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::mpsc::error::SendError;
use tokio::sync::{mpsc, Semaphore};

use super::message::Message;

/// Rows in flight per channel.
pub const CHANNEL_ROWS: usize = 2048;

/// A channel of `rows` credits.
pub fn channel(rows: usize) -> (Sender, Receiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let credits = Arc::new(Semaphore::new(rows));
    let max = u32::try_from(rows.max(1)).unwrap_or(u32::MAX);
    (
        Sender {
            tx,
            credits: credits.clone(),
            max,
        },
        Receiver { rx, credits },
    )
}

/// The credits `msg` takes in a channel of `max` credits.
pub fn credits_of(msg: &Message, max: u32) -> u32 {
    match msg {
        Message::Chunk(c) => u32::try_from(c.len()).unwrap_or(u32::MAX).clamp(1, max),
        Message::Barrier(_) => 0,
    }
}

#[derive(Clone)]
pub struct Sender {
    tx: mpsc::UnboundedSender<(Message, u32)>,
    credits: Arc<Semaphore>,
    max: u32,
}

impl Sender {
    /// Send once the channel has credits for `msg`; fails (returning it)
    /// when the receiver is gone.
    pub async fn send(&self, msg: Message) -> Result<(), SendError<Message>> {
        let n = credits_of(&msg, self.max);
        if n > 0 {
            match self.credits.acquire_many(n).await {
                Ok(permit) => permit.forget(),
                Err(_) => return Err(SendError(msg)),
            }
        }
        self.tx.send((msg, n)).map_err(|SendError((msg, n))| {
            self.credits.add_permits(n as usize);
            SendError(msg)
        })
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

pub struct Receiver {
    rx: mpsc::UnboundedReceiver<(Message, u32)>,
    credits: Arc<Semaphore>,
}

impl Receiver {
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        self.rx.poll_recv(cx).map(|m| {
            m.map(|(msg, n)| {
                self.credits.add_permits(n as usize);
                msg
            })
        })
    }

    pub async fn recv(&mut self) -> Option<Message> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    pub fn try_recv(&mut self) -> Result<Message, mpsc::error::TryRecvError> {
        let (msg, n) = self.rx.try_recv()?;
        self.credits.add_permits(n as usize);
        Ok(msg)
    }
}

impl Drop for Receiver {
    /// Senders waiting for credits fail instead of waiting forever.
    fn drop(&mut self) {
        self.credits.close();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::message::{Barrier, Epoch};
    use ebbflow_common::{DataType, StreamChunk};

    fn rows(n: usize) -> Message {
        let text: Vec<String> = (0..n).map(|i| format!("+ {i}")).collect();
        Message::Chunk(StreamChunk::from_pretty(
            &text.join("\n"),
            &[DataType::Int64],
        ))
    }

    fn barrier() -> Message {
        Message::Barrier(Barrier::new(Epoch { curr: 2, prev: 1 }))
    }

    async fn blocks(tx: &Sender, msg: Message) -> bool {
        tokio::time::timeout(Duration::from_millis(50), tx.send(msg))
            .await
            .is_err()
    }

    #[tokio::test]
    async fn rows_in_flight_are_bounded_and_barriers_pass() {
        let (tx, mut rx) = channel(10);
        tx.send(rows(6)).await.unwrap();
        tx.send(rows(4)).await.unwrap();
        // Full: a chunk waits, a barrier does not.
        assert!(blocks(&tx, rows(1)).await);
        tx.send(barrier()).await.unwrap();
        // Taking the 6-row chunk gives its credits back.
        assert!(matches!(rx.recv().await, Some(Message::Chunk(c)) if c.len() == 6));
        tx.send(rows(6)).await.unwrap();
        assert!(blocks(&tx, rows(1)).await);
        // A chunk larger than the channel passes alone, once it is empty.
        assert!(matches!(rx.recv().await, Some(Message::Chunk(c)) if c.len() == 4));
        assert!(matches!(rx.recv().await, Some(Message::Barrier(_))));
        assert!(matches!(rx.recv().await, Some(Message::Chunk(c)) if c.len() == 6));
        tx.send(rows(25)).await.unwrap();
        assert!(blocks(&tx, rows(1)).await);
        assert!(matches!(rx.recv().await, Some(Message::Chunk(c)) if c.len() == 25));
        tx.send(rows(1)).await.unwrap();
    }

    #[tokio::test]
    async fn a_sender_waiting_for_credits_fails_when_the_receiver_goes() {
        let (tx, rx) = channel(2);
        tx.send(rows(2)).await.unwrap();
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(rows(1)).await.is_err() }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(rx);
        assert!(waiting.await.unwrap());
        assert!(tx.is_closed());
        assert!(tx.send(barrier()).await.is_err());
    }
}
