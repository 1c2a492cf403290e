//! One streamed round read from SSE (framing by the `sse-stream` crate), whatever the wire
//! API: every wait bounded by the idle timeout, errors classified and redacted; an
//! [`SseParser`] per API says what each event means. Fragments that have already arrived
//! together (text, reasoning, refusal, one call's arguments) leave as one event: the
//! stream never waits for more, it only takes what is there (issue 34).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
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
    /// What reading ahead for fragments found that is not one (the end, a body error).
    ahead: Option<Next>,
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
            ahead: None,
            failed: None,
        }
    }

    /// Redacts these credentials from every error the stream reports.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> Self {
        self.secrets = secrets;
        self
    }

    async fn poll_event(&mut self) -> Next {
        if let Some(next) = self.ahead.take() {
            return next;
        }
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
            if let Some(mut e) = self.pending.pop_front() {
                if self.pending.is_empty() && is_fragment(&e) {
                    self.coalesce(&mut e);
                }
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
            self.take(&ev);
        }
    }

    /// Parses one SSE event into `pending`; a parser error ends the round and is given
    /// after what the event said before it (`failed`).
    fn take(&mut self, ev: &Sse) {
        self.last_data = Instant::now();
        let Some(data) = ev.data.as_deref().filter(|d| !d.is_empty()) else { return };
        match self.parser.parse(ev.event.as_deref(), data, &mut self.pending) {
            Ok(false) => {}
            Ok(true) => self.done = true,
            Err(e) => {
                self.done = true;
                self.failed = Some(e);
            }
        }
    }

    /// Folds into `first` the fragments that continue it among the events already here:
    /// polled without a waker, so nothing is waited for. Stops at the first event that does
    /// not continue it (kept in `pending`), or at the end or an error (kept in `ahead` or
    /// `failed`).
    fn coalesce(&mut self, first: &mut UpstreamEvent) {
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        while self.pending.is_empty() && !self.done && self.ahead.is_none() {
            match self.events.as_mut().poll_next(&mut cx) {
                Poll::Pending => return,
                Poll::Ready(None) => self.ahead = Some(Next::End),
                Poll::Ready(Some(Err(e))) => self.ahead = Some(Next::Event(Err(e))),
                Poll::Ready(Some(Ok(ev))) => self.take(&ev),
            }
            while let Some(next) = self.pending.front() {
                if !continue_with(first, next) {
                    return;
                }
                self.pending.pop_front();
            }
        }
    }
}

/// True for an event that a later one may continue.
fn is_fragment(e: &UpstreamEvent) -> bool {
    matches!(
        e,
        UpstreamEvent::Text(_)
            | UpstreamEvent::Refusal(_)
            | UpstreamEvent::Reasoning(_)
            | UpstreamEvent::ReasoningSummary { .. }
            | UpstreamEvent::ToolCall { arguments: Some(_), .. }
    )
}

/// Appends `next` to `into` when it continues it: text after text (and so for refusal,
/// reasoning and one summary part), or more arguments of the same call (no new id or name). False otherwise.
fn continue_with(into: &mut UpstreamEvent, next: &UpstreamEvent) -> bool {
    use UpstreamEvent::{Reasoning, ReasoningSummary, Refusal, Text, ToolCall};
    match (into, next) {
        (Text(a), Text(b)) | (Refusal(a), Refusal(b)) | (Reasoning(a), Reasoning(b)) => a.push_str(b),
        (ReasoningSummary { part: p, delta: a }, ReasoningSummary { part: q, delta: b }) if p == q => a.push_str(b),
        (
            ToolCall { index: i, arguments: Some(a), .. },
            ToolCall { index: j, id: None, name: None, arguments: Some(b) },
        ) if i == j => a.push_str(b),
        _ => return false,
    }
    true
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

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;
    use crate::upstream::chat::RoundStream;

    fn chunk(delta: &str) -> String {
        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{delta}}}]}}\n\n")
    }

    async fn all(mut round: RoundStream) -> Vec<UpstreamEvent> {
        let mut out = Vec::new();
        while let Some(e) = round.next().await {
            out.push(e.unwrap());
        }
        out
    }

    fn texts(events: &[UpstreamEvent]) -> Vec<&str> {
        events.iter().filter_map(|e| if let UpstreamEvent::Text(t) = e { Some(t.as_str()) } else { None }).collect()
    }

    /// Text that arrived in one read leaves as one event; what follows it is kept in order.
    #[tokio::test]
    async fn fragments_that_arrived_together_are_one_event() {
        let body = [
            chunk(r#"{"content":"Hel"}"#),
            chunk(r#"{"content":"lo"}"#),
            chunk(r#"{"content":", world"}"#),
            chunk(r#"{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\""}}]}"#),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}"#),
            chunk(r#"{"tool_calls":[{"index":1,"id":"c2","function":{"name":"g","arguments":"{}"}}]}"#),
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n".into(),
        ]
        .concat();
        let bytes = futures_util::stream::iter([Ok::<_, Infallible>(Bytes::from(body))]);
        let events = all(RoundStream::new(bytes, Duration::from_secs(5))).await;
        assert_eq!(texts(&events), ["Hello, world"]);
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                UpstreamEvent::ToolCall { index, id, arguments, .. } => Some((*index, id.clone(), arguments.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            [(0, Some("c1".to_string()), Some("{\"a\":1}".to_string())), (1, Some("c2".to_string()), Some("{}".to_string()))]
        );
        assert!(matches!(events.last(), Some(UpstreamEvent::Finish(_))), "{events:?}");
    }

    /// Nothing is held back: a fragment leaves while the next one has not arrived.
    #[tokio::test]
    async fn a_fragment_is_never_held_for_the_next() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Result<Bytes, Infallible>>();
        let bytes = tokio_stream_of(rx);
        let mut round = RoundStream::new(bytes, Duration::from_secs(5));
        tx.send(Ok(Bytes::from(chunk(r#"{"content":"a"}"#)))).unwrap();
        let first = tokio::time::timeout(Duration::from_secs(5), round.next()).await.unwrap();
        assert!(matches!(first, Some(Ok(UpstreamEvent::Text(ref t))) if t == "a"), "{first:?}");
        tx.send(Ok(Bytes::from(chunk(r#"{"content":"b"}"#) + &chunk(r#"{"content":"c"}"#)))).unwrap();
        drop(tx);
        let second = round.next().await;
        assert!(matches!(second, Some(Ok(UpstreamEvent::Text(ref t))) if t == "bc"), "{second:?}");
        // The body ended before [DONE]: the error comes after the text.
        assert!(matches!(round.next().await, Some(Err(UpstreamError::Protocol(_)))));
    }

    fn tokio_stream_of<T: Send + 'static>(mut rx: tokio::sync::mpsc::UnboundedReceiver<T>) -> impl Stream<Item = T> + Send {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
