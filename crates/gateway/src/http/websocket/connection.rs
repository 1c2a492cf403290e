//! One WebSocket connection (2026 supplement W1): its client events in, every response's
//! JSON events out, its lanes, its kept responses and its bounds.
//!
//! The loop reads the client's messages, starts each `response.create` through the turn
//! service (`App::create`, with a sink of the WebSocket framing into the connection's one
//! outgoing queue) and writes what the turns send, as they send it: all that is queued is
//! written, then flushed once (no timer, nothing held). Lanes (`stream_id`) run FIFO; at
//! most `websocket.max_in_flight` responses run at once, the others wait; a second create on
//! the default lane while one is running or waiting is an `error` event. A `store: false`
//! response that ends `completed` or `incomplete` is kept as its lane's latest, for
//! `previous_response_id`. Closing the connection drops every running response's
//! attachment: `store: false` turns stop, stored ones run to their end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use bytes::Bytes;
use futures_util::stream::FuturesUnordered;
use futures_util::{SinkExt, StreamExt};
use protocol::ResponseStatus;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tracing::Instrument;

use super::super::body_budget::BodyBudget;
use super::lanes::{Create, Lanes};
use super::messages::{self, ClientEvent};
use crate::admission::{ConnectionPermit, KeyId};
use crate::error::{ErrorKind, GatewayError};
use crate::events::sink::DeltaKind;
use crate::events::wire_sink::{Framing, WireSink};
use crate::events::EventSink;
use crate::service::kept::ConnectionResponses;
use crate::service::{Admitted, App, Caller, CreateRequest, Refusal};
use crate::turn::continuation::Previous;

/// Close codes (RFC 6455 §7.4.1).
const NORMAL: u16 = 1000;
const GOING_AWAY: u16 = 1001;
const TOO_BIG: u16 = 1009;
const PROTOCOL: u16 = 1002;

/// How a connection past `websocket.max_age_ms` closes, after answering a create with
/// `websocket_connection_limit_reached`.
const AGED: (u16, &str) = (NORMAL, "websocket_connection_limit_reached: websocket.max_age_ms");

/// How long the close handshake may take: the client's close frame, or the end.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Events written before one flush, at most (a burst's events share a write).
const BATCH: usize = 256;

/// What a finished response tells the loop.
struct Done {
    stream_id: Option<String>,
}

/// Who the connection serves and its limits.
pub struct Connection {
    pub app: Arc<App>,
    pub project: String,
    pub key: KeyId,
    /// Held until the connection ends (`websocket.max_connections_per_key`).
    pub permit: ConnectionPermit,
    /// This connection's id in logs.
    pub id: String,
    /// The body budget its large messages take from (`limits.body_memory_bytes`).
    pub budget: Option<Arc<BodyBudget>>,
}

impl Connection {
    /// Serves `socket` until the client closes it, a bound closes it, or the gateway
    /// shuts down.
    pub async fn serve(self, socket: WebSocket) {
        let Connection { app, project, key, permit, id, budget } = self;
        let config = app.websocket.clone();
        let metrics = app.metrics.clone();
        if let Some(m) = &metrics {
            m.gauge(crate::telemetry::names::WEBSOCKET_CONNECTIONS).increment(1.0);
        }
        let (mut tx, mut rx) = socket.split();
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Bytes>();
        let kept = Arc::new(ConnectionResponses::default());
        let shared = Shared { app: app.clone(), project: Arc::from(project.as_str()), key, kept, out: out_tx.clone(), connection: Arc::from(id.as_str()) };
        let mut lanes = Lanes::new(&config);
        let mut running = FuturesUnordered::new();
        let opened = Instant::now();
        let mut last_message = Instant::now();
        let keepalive = app.keepalive.max(Duration::from_millis(10));
        let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + keepalive, keepalive);
        let idle = Duration::from_millis(config.idle_timeout_ms.max(1));
        let age = tokio::time::sleep(Duration::from_millis(config.max_age_ms.max(1)));
        tokio::pin!(age);
        // Set when no new response is taken (age, shutdown): the reason the connection
        // closes with once the running ones have ended.
        let mut closing: Option<(u16, &'static str)> = None;
        // The connection is older than `websocket.max_age_ms`: its next create is answered
        // `websocket_connection_limit_reached` and the connection then closes (W1.5).
        let mut aged = false;
        let mut received = 0u64;
        let close = loop {
            if let Some(reason) = closing {
                if lanes.in_flight == 0 {
                    break Some(reason);
                }
            }
            let idle_at = tokio::time::Instant::from_std(last_message + idle);
            tokio::select! {
                biased;
                Some(first) = out_rx.recv() => {
                    if write(&mut tx, first, &mut out_rx, metrics.as_deref()).await.is_err() {
                        break None;
                    }
                }
                msg = rx.next() => {
                    // Only client events count as activity (not the pongs to our pings).
                    if matches!(msg, Some(Ok(Message::Text(_) | Message::Binary(_)))) {
                        last_message = Instant::now();
                    }
                    match msg {
                        None | Some(Ok(Message::Close(_))) => break None,
                        Some(Err(e)) => break Some(read_failed(e, app.max_body_bytes)),
                        Some(Ok(Message::Text(text))) => {
                            received += 1;
                            let text = Bytes::from(text);
                            // A large message takes room in the body budget before it is
                            // parsed (as a request body does), or is refused.
                            let room = match &budget {
                                Some(b) => b.take_now(text.len() as u64),
                                None => Ok(None),
                            };
                            let Ok(room) = room else {
                                refuse(&out_tx, &busy(), messages::stream_id_of(&text).as_deref());
                                continue;
                            };
                            match messages::read(text) {
                                Ok(ClientEvent::Create { stream_id, generate, body, parsed }) => {
                                    count(metrics.as_deref(), "response.create");
                                    let create = Create { stream_id, generate, body, parsed, ended: Arc::default(), room };
                                    if aged && closing.is_none() {
                                        closing = Some(AGED);
                                    }
                                    match closing {
                                        Some(_) => refuse(&out_tx, &limit_reached(&config), create.stream_id.as_deref()),
                                        None => match lanes.admit(create) {
                                            Ok(Some(create)) => running.push(respond(shared.clone(), create)),
                                            Ok(None) => {}
                                            Err(r) => refuse(&out_tx, &r.error, r.stream_id.as_deref()),
                                        },
                                    }
                                }
                                Ok(ClientEvent::Steer { input, previous_response_id }) => {
                                    count(metrics.as_deref(), "response.steer");
                                    let _ = out_tx.send(messages::steer_failed(input, previous_response_id));
                                }
                                Err(rejected) => {
                                    count(metrics.as_deref(), "invalid");
                                    refuse(&out_tx, &rejected.error, rejected.stream_id.as_deref());
                                }
                            }
                        }
                        Some(Ok(Message::Binary(_))) => {
                            received += 1;
                            count(metrics.as_deref(), "invalid");
                            let e = GatewayError::bad_request(None, "Binary messages are not accepted: send each client event as a JSON text message.").with_code("invalid_message");
                            refuse(&out_tx, &e, None);
                        }
                        // Pings are answered by the protocol layer; pongs need nothing.
                        Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    }
                }
                Some(done) = running.next(), if !running.is_empty() => {
                    let done: Done = done;
                    for create in lanes.finished(done.stream_id) {
                        running.push(respond(shared.clone(), create));
                    }
                }
                _ = ping.tick() => {
                    // Also while gateway tools run: the connection is never silent for long.
                    if tx.send(Message::Ping(Bytes::new())).await.is_err() {
                        break None;
                    }
                }
                () = tokio::time::sleep_until(idle_at), if lanes.in_flight == 0 && closing.is_none() => {
                    break Some((NORMAL, "idle: no message within websocket.idle_timeout_ms"));
                }
                () = &mut age, if !aged => {
                    // What runs or waits goes on; a new create is refused (then the
                    // connection closes), so a client rotates at a turn's boundary.
                    aged = true;
                }
                () = app.stop_claiming.cancelled(), if closing.is_none() => {
                    closing = Some((GOING_AWAY, "the gateway is shutting down"));
                    let e = GatewayError::server(ErrorKind::Unavailable, "The gateway is shutting down; open a new connection.", Some("server_shutting_down"));
                    lanes.drop_waiting(&out_tx, &e);
                }
            }
        };
        // What the turns sent before the end, then the close frame with its reason.
        while let Ok(first) = out_rx.try_recv() {
            if write(&mut tx, first, &mut out_rx, metrics.as_deref()).await.is_err() {
                break;
            }
        }
        if let Some((code, reason)) = close {
            let frame = CloseFrame { code, reason: Utf8Bytes::from_static(reason) };
            if tx.send(Message::Close(Some(frame))).await.is_ok() {
                // The close handshake: the client's close frame (what it sends meanwhile is
                // dropped), so that its last reads see ours rather than a reset.
                let _ = tokio::time::timeout(CLOSE_WAIT, async {
                    while let Some(Ok(msg)) = rx.next().await {
                        if matches!(msg, Message::Close(_)) {
                            break;
                        }
                    }
                })
                .await;
            }
        }
        // Dropping the running responses drops their attachments: `store: false` turns stop.
        drop(running);
        if let Some(m) = &metrics {
            m.gauge(crate::telemetry::names::WEBSOCKET_CONNECTIONS).decrement(1.0);
        }
        tracing::info!(connection_id = %id, messages = received, age_ms = opened.elapsed().as_millis() as u64, "websocket closed");
        drop(permit);
    }
}

/// What every response of the connection is started with.
#[derive(Clone)]
struct Shared {
    app: Arc<App>,
    project: Arc<str>,
    key: KeyId,
    kept: Arc<ConnectionResponses>,
    out: UnboundedSender<Bytes>,
    connection: Arc<str>,
}

/// Runs one `response.create` to its end: its own request id, span and log line (as an
/// HTTP request has), its events into the connection's queue, and what the connection keeps.
async fn respond(shared: Shared, create: Create) -> Done {
    let request_id = super::super::request::new_id();
    let request_id = request_id.to_str().unwrap_or("-").to_string();
    let span = tracing::info_span!(
        parent: None,
        "request",
        request_id = %request_id,
        method = "WEBSOCKET",
        route = "/v1/responses",
        connection_id = %shared.connection,
        stream_id = create.stream_id.as_deref(),
        status = tracing::field::Empty,
    );
    let stream_id = create.stream_id.clone();
    let started = Instant::now();
    let status = respond_in(&shared, create).instrument(span.clone()).await;
    span.record("status", status);
    tracing::info!(
        request_id = %request_id,
        connection_id = %shared.connection,
        stream_id = stream_id.as_deref(),
        status,
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        "response.create"
    );
    Done { stream_id }
}

/// [`respond`]'s work: the response's end status, or the error code it was refused with.
async fn respond_in(shared: &Shared, create: Create) -> &'static str {
    let Create { stream_id, generate, body, parsed, ended, room } = create;
    let previous = parsed.previous_response_id.clone();
    let lane = stream_id.as_deref();
    let caller = Caller { project: &shared.project, key: shared.key, rate_counted: false };
    let wire = WireSink::new(shared.out.clone(), Framing::WebSocket { stream_id: stream_id.clone() });
    let sink = Watched { inner: wire, ended };
    let request = CreateRequest { body: &body, parsed: *parsed, generate, previous: Previous::Kept(&*shared.kept) };
    let evict = || {
        if let Some(p) = &previous {
            shared.kept.evict(lane, p);
        }
    };
    let admitted = shared.app.create(caller, request, Some(Box::new(sink))).await;
    // The turn is built (or refused): the message's bytes and its room go back.
    drop(body);
    drop(room);
    let turn = match admitted {
        Ok(Admitted::Started(turn)) => turn,
        Ok(Admitted::Queued { .. }) => return "queued",
        Err(refusal) => {
            // A same-lane continuation that fails evicts its parent (W1.4).
            evict();
            let e = match refusal {
                Refusal::Invalid(e) => e,
                Refusal::Limited(refused) => GatewayError::rate_limited(refused.message()).with_code("rate_limit_exceeded"),
            };
            let _ = shared.out.send(messages::error_event(&e, lane));
            return "refused";
        }
    };
    match turn.outcome().await {
        Ok(outcome) => {
            let status = outcome.response.status;
            if status == ResponseStatus::Failed {
                evict();
            } else {
                // Stored or not: the next create continues from memory.
                shared.kept.keep(lane, &outcome.response.id, outcome.transcript);
            }
            status.as_str()
        }
        Err(_) => {
            evict();
            "failed"
        }
    }
}

/// The WebSocket sink of one response, which notes when its terminal event goes out.
#[derive(Debug)]
struct Watched {
    inner: WireSink,
    ended: Arc<AtomicBool>,
}

impl EventSink for Watched {
    fn event(&mut self, kind: &protocol::events::EventKind, seq: u64) {
        self.inner.event(kind, seq);
    }
    fn content_delta(&mut self, kind: DeltaKind, item_id: &str, output_index: usize, delta: &str, seq: u64) {
        self.inner.content_delta(kind, item_id, output_index, delta, seq);
    }
    fn started(&mut self, response: &protocol::Response, seq: u64) {
        self.inner.started(response, seq);
    }
    fn terminal(&mut self, name: &'static str, response: &protocol::Response, seq: u64) {
        // Before the event is queued: the client cannot see it earlier.
        self.ended.store(true, Ordering::Release);
        self.inner.terminal(name, response, seq);
    }
    fn first_delta(&mut self) {
        self.inner.first_delta();
    }
    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// `websocket_connection_limit_reached` (W1.5).
fn limit_reached(c: &crate::config::websocket::WebSocketConfig) -> GatewayError {
    GatewayError::bad_request(
        None,
        format!("This connection reached its age limit ({} s, websocket.max_age_ms): open a new connection.", c.max_age_ms / 1000),
    )
    .with_code("websocket_connection_limit_reached")
}

/// A message refused for want of room in the body budget: 503 `server_busy`, as a request
/// body is refused over HTTP (the connection stays open).
fn busy() -> GatewayError {
    GatewayError::server(
        ErrorKind::Unavailable,
        "The gateway is reading too many large messages and request bodies at once; retry shortly (limits.body_memory_bytes).",
        Some("server_busy"),
    )
}

/// An `error` event into the connection's queue.
fn refuse(out: &UnboundedSender<Bytes>, e: &GatewayError, lane: Option<&str>) {
    let _ = out.send(messages::error_event(e, lane));
}

/// A client message counted by kind (`response.create`, `response.steer`, `invalid`).
fn count(metrics: Option<&crate::telemetry::Metrics>, kind: &'static str) {
    if let Some(m) = metrics {
        m.counter(crate::telemetry::names::WEBSOCKET_MESSAGES, vec![metrics::Label::new("type", kind)]).increment(1);
    }
}

/// Writes `first` and everything else queued (up to [`BATCH`]) as text messages, then
/// flushes once. Empty entries (a sink's "write now" mark) are skipped.
async fn write(
    tx: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    first: Bytes,
    rest: &mut UnboundedReceiver<Bytes>,
    metrics: Option<&crate::telemetry::Metrics>,
) -> Result<(), axum::Error> {
    let mut sent = 0u64;
    let mut next = Some(first);
    while let Some(event) = next.take() {
        if !event.is_empty() {
            // The gateway's events are JSON text: always UTF-8.
            if let Ok(text) = Utf8Bytes::try_from(event) {
                tx.feed(Message::Text(text)).await?;
                sent += 1;
            }
        }
        if sent < BATCH as u64 {
            next = rest.try_recv().ok();
        }
    }
    tx.flush().await?;
    if let Some(m) = metrics {
        m.counter(crate::telemetry::names::WEBSOCKET_EVENTS, Vec::new()).increment(sent);
    }
    Ok(())
}

/// A read that failed: a message over the body limit is closed with 1009 and a reason; any
/// other protocol error with 1002.
fn read_failed(e: axum::Error, max: usize) -> (u16, &'static str) {
    let too_big = e
        .into_inner()
        .downcast_ref::<tungstenite::Error>()
        .is_some_and(|e| matches!(e, tungstenite::Error::Capacity(_)));
    tracing::debug!(max_bytes = max, too_big, "websocket read failed");
    if too_big {
        (TOO_BIG, "message too big: larger than server.max_body_bytes")
    } else {
        (PROTOCOL, "protocol error")
    }
}
