//! One streamed round read from SSE (framing by the `sse-stream` crate), whatever the wire
//! API: every wait bounded by the idle timeout, errors classified and redacted; an
//! [`SseParser`] per API says what each event means.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use sse_stream::{Sse, SseByteStream};
use tokio::time::{Instant, Sleep};

use crate::upstream::redact::Secrets;
use crate::upstream::{UpstreamError, UpstreamEvent};

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Reads one wire API's SSE events into neutral events (`chat::ChatParser`,
/// `responses::ResponsesParser`).
pub trait SseParser: Send {
    /// Parses one SSE event (`event` is its `event:` name, `data` its data, not empty) and
    /// pushes what it means to `out`. `Ok(true)` ends the round (the API's last event).
    fn parse(&mut self, event: Option<&str>, data: &str, out: &mut VecDeque<UpstreamEvent>) -> Result<bool, UpstreamError>;
    /// True once the model finished (a body that ends before is cut short).
    fn finished(&self) -> bool;
}

/// The events of one streamed round. Every wait is bounded by the idle timeout; the timer
/// is only re-armed when it fires early, so a busy stream costs no timer work per chunk.
pub struct SseRound<P> {
    events: Events,
    pending: VecDeque<UpstreamEvent>,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    last_data: Instant,
    done: bool,
    parser: P,
    /// Credentials to redact from error messages (`ChatCompletions::secrets`).
    secrets: Arc<Secrets>,
    /// An error the parser reported after events of the same SSE event (a failed
    /// response's usage): given once those are.
    failed: Option<UpstreamError>,
}

enum Next {
    Event(Result<Sse, sse_stream::Error>),
    End,
    Idle,
}

impl<P: SseParser> SseRound<P> {
    /// Reads SSE (with the `sse-stream` crate) from any byte stream (the HTTP body, or
    /// recorded bytes in tests) with `parser`.
    pub fn with_parser<S, E>(bytes: S, idle: Duration, parser: P) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        SseRound {
            events: Box::pin(SseByteStream::new(bytes)),
            pending: VecDeque::new(),
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
            last_data: Instant::now(),
            done: false,
            parser,
            secrets: Arc::default(),
            failed: None,
        }
    }

    /// Redacts these credentials from every error the stream reports.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> Self {
        self.secrets = secrets;
        self
    }

    async fn poll_event(&mut self) -> Next {
        let (events, deadline, idle, last) = (&mut self.events, &mut self.deadline, self.idle, self.last_data);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(item) = events.as_mut().poll_next(cx) {
                return Poll::Ready(match item {
                    Some(ev) => Next::Event(ev),
                    None => Next::End,
                });
            }
            loop {
                match deadline.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) => {
                        let due = last + idle;
                        if Instant::now() >= due {
                            return Poll::Ready(Next::Idle);
                        }
                        deadline.as_mut().reset(due);
                    }
                }
            }
        })
        .await
    }

    /// The next event; `None` at the end of the round. Error messages never hold a secret.
    pub async fn next(&mut self) -> Option<Result<UpstreamEvent, UpstreamError>> {
        match self.next_raw().await {
            Some(Err(e)) if !self.secrets.is_empty() => Some(Err(e.redacted(|m| self.secrets.redact(m)))),
            other => other,
        }
    }

    async fn next_raw(&mut self) -> Option<Result<UpstreamEvent, UpstreamError>> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(Ok(e));
            }
            if let Some(e) = self.failed.take() {
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            let ev = match self.poll_event().await {
                Next::Idle => {
                    self.done = true;
                    return Some(Err(UpstreamError::Timeout(self.idle.as_millis() as u64)));
                }
                Next::End => {
                    self.done = true;
                    if self.parser.finished() {
                        return None;
                    }
                    return Some(Err(UpstreamError::Protocol("the stream ended before the model finished".into())));
                }
                Next::Event(Err(e)) => {
                    self.done = true;
                    return Some(Err(match e {
                        sse_stream::Error::Body(_) => UpstreamError::Unreachable("the upstream connection failed mid-stream".into()),
                        other => UpstreamError::Protocol(other.to_string()),
                    }));
                }
                Next::Event(Ok(ev)) => ev,
            };
            self.last_data = Instant::now();
            let Some(data) = ev.data.as_deref() else { continue };
            if data.is_empty() {
                continue;
            }
            match self.parser.parse(ev.event.as_deref(), data, &mut self.pending) {
                Ok(false) => {}
                Ok(true) => self.done = true,
                Err(e) => {
                    self.done = true;
                    // What the event said before the error (its usage) comes first.
                    if !self.pending.is_empty() {
                        self.failed = Some(e);
                        continue;
                    }
                    return Some(Err(e));
                }
            }
        }
    }
}

impl<P: SseParser + 'static> SseRound<P> {
    /// The round as the turn reads it: each error inside the stream classified as an HTTP
    /// answer would be (a 404 naming `model` is `UnknownModel`).
    pub fn into_upstream(self, model: &str) -> crate::upstream::UpstreamStream {
        // Boxed: the unfold moves its state through each step, and a pointer moves cheaper
        // than the stream.
        let model: Arc<str> = model.into();
        let events = futures_util::stream::unfold((Box::new(self), model), |(mut rs, model)| async move {
            let ev = rs.next().await?.map_err(|e| crate::upstream::http::about_the_model(e, &model));
            Some((ev, (rs, model)))
        });
        Box::pin(events)
    }
}
