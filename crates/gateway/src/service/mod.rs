//! The one way in for every transport (DESIGN.md "Pipeline": service; issue 27). A transport
//! (HTTP, the WebSocket, the background worker) parses its input and hands the service the
//! caller, the parsed create request and, for a streamed turn, an event sink; the service
//! answers a refusal, a queued run, or a started turn. It owns admission (`[limits]`), the
//! one turn context, the background/foreground branch and the spawn/cancel policy; its
//! [`App`] is the composition root.

pub mod app;
pub mod compact;
pub mod kept;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use protocol::{CreateResponse, Response};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::admission::{KeyId, Refused, StreamPermit, UpstreamPermit};
use crate::error::GatewayError;
use crate::events::EventSink;
use crate::store::StoreError;
use crate::turn::continuation::Previous;
use crate::turn::{self, driver, Outcome, Prepared};

pub use app::App;

/// Who asks: the request's project (tenant; what it continues from and stores are its
/// own) and its API key (`[limits]` count per key).
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub project: &'a str,
    pub key: KeyId,
    /// True when the transport has counted this request against the key's rate already
    /// (HTTP: every `/v1/*` request is counted by its layer); false: the service counts it
    /// (a WebSocket `response.create`).
    pub rate_counted: bool,
}

/// A create request: its body as sent (its `input` is stored as given; a background run
/// stores the body for its worker) and parsed (`turn::parse_request`).
#[derive(Debug)]
pub struct CreateRequest<'a> {
    pub body: &'a [u8],
    pub parsed: CreateResponse,
    /// False: prepare only, no model call (WebSocket `generate: false`).
    pub generate: bool,
    /// Where `previous_response_id` is loaded from (a WebSocket connection's kept responses).
    pub previous: Previous<'a>,
}

impl<'a> CreateRequest<'a> {
    /// A request that generates and continues from the store.
    pub fn new(body: &'a [u8], parsed: CreateResponse) -> Self {
        CreateRequest { body, parsed, generate: true, previous: Previous::Store }
    }
}

/// Why a request was not admitted.
#[derive(Debug)]
pub enum Refusal {
    /// An invalid request, or one that cannot run now (4xx/5xx, OpenAI-shaped).
    Invalid(GatewayError),
    /// A `[limits]` bound (429 `rate_limit_exceeded` with `Retry-After`).
    Limited(Refused),
}

impl From<GatewayError> for Refusal {
    fn from(e: GatewayError) -> Self {
        Refusal::Invalid(e)
    }
}

/// An admitted request.
#[derive(Debug)]
pub enum Admitted<'s> {
    /// A background run, queued (its worker runs it): the `queued` Response, and with
    /// `stream: true` its events (JSON, from `response.created` on) following the run's log.
    Queued { response: Box<Response>, events: Option<UnboundedReceiver<bytes::Bytes>> },
    /// A foreground turn, started: its first events have gone to the sink.
    Started(Turn<'s>),
}

/// A started foreground turn.
#[derive(Debug)]
pub struct Turn<'s> {
    run: Running<'s>,
    /// Held by the transport while its client is attached: dropping it stops the turn (a
    /// client that leaves ends its foreground turn, issue 28).
    pub attached: Attached,
    /// True when the turn is stored at its end (`store: true` or a conversation).
    pub stored: bool,
}

#[derive(Debug)]
enum Running<'s> {
    /// Not streamed and not stored: runs in the caller's future when it asks for the
    /// outcome (a client that leaves drops it, and so the upstream request).
    Inline { turn: driver::Started, app: &'s App, permits: Permits },
    /// In a task of its own (streamed, or stored).
    Spawned(JoinHandle<Result<Outcome, StoreError>>),
}

/// A turn's `[limits]` slots, held until it ends.
#[derive(Debug)]
struct Permits(#[allow(dead_code)] Option<StreamPermit>, #[allow(dead_code)] UpstreamPermit);

impl Turn<'_> {
    /// For a transport that streams the turn's events and does not wait for its end: the
    /// turn runs on in its task, stopped by dropping what this returns when the policy says
    /// so. (A turn that runs inline has no task: it never started and is dropped.)
    pub fn into_attached(mut self) -> Attached {
        std::mem::take(&mut self.attached)
    }

    /// Runs (inline) or waits for the turn to its end. Dropped before that (the client
    /// left), the turn stops: an inline one with the future, a spawned one through its
    /// attachment (a stored one is then stored `incomplete`). Errors: its end-of-turn write
    /// failed (nothing was stored; a stream has ended with `response.failed`), or its task did.
    pub async fn outcome(self) -> Result<Outcome, StoreError> {
        let Turn { run, mut attached, .. } = self;
        match run {
            Running::Inline { turn, app, permits } => {
                let outcome = Box::pin(turn.run(&app.runner)).await;
                drop(permits);
                outcome
            }
            Running::Spawned(task) => {
                let joined = task.await;
                attached.release();
                match joined {
                    Ok(outcome) => outcome,
                    Err(e) => {
                        tracing::error!(error = %e, "a turn's task failed");
                        Err(StoreError::Other("the turn's task failed".into()))
                    }
                }
            }
        }
    }
}

/// What a transport holds while its client is attached to a turn; dropped, it cancels the
/// turn's token: the turn stops its upstream round and gateway calls and ends `incomplete`
/// (a stored one is stored so, DESIGN.md "Pipeline"). Background mode outlives a client.
#[derive(Debug, Default)]
pub struct Attached(Option<(CancellationToken, Arc<AtomicBool>)>);

impl Attached {
    /// The turn has ended: dropping this does nothing any more.
    pub fn release(&mut self) {
        self.0 = None;
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        if let Some((t, left)) = self.0.take() {
            // Before the token: the turn reads why it was stopped once it sees it.
            left.store(true, Ordering::Release);
            t.cancel();
        }
    }
}

/// Where a turn context is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A client's create request.
    Request,
    /// A background worker's claimed run.
    Worker,
}

impl App {
    /// The context every turn is prepared with: the one place it is made.
    fn context<'a>(&'a self, project: &'a str, origin: Origin, previous: Previous<'a>) -> turn::Context<'a> {
        turn::Context {
            models: self.models.as_ref(),
            reject_unknown: self.reject_unknown,
            registry: &self.registry,
            caps: self.upstream.caps(),
            store: &self.store,
            project,
            lease_ttl_ms: self.lease_ttl_ms,
            sizes: self.sizes,
            // A worker has just used the store (it claimed the run).
            ping_store: origin == Origin::Request,
            worker: origin == Origin::Worker,
            previous,
            sealer: Some(&self.sealer),
        }
    }

    /// Admits and starts one create request (contract §1; `background`, issue 19).
    ///
    /// `[limits]` first (the key's rate unless the transport counted it; a stream slot for
    /// a streamed turn; an upstream slot, waiting in its bounded queue, for a foreground
    /// one), all before anything is stored or sent upstream; then the turn is prepared. A
    /// background request is queued and answered at once. A foreground turn sends its first
    /// events to `sink` (none: not streamed, its answer is the outcome's Response) and
    /// runs: inline when neither streamed nor stored, else in a task of its own on the
    /// app's tracker (shutdown waits for it). A client that leaves stops its turn: the
    /// transport drops [`Turn::attached`] (or the outcome's future), and a stored turn is
    /// then stored `incomplete` with the output it had (issue 28).
    pub async fn create<'s>(
        self: &'s Arc<Self>,
        caller: Caller<'_>,
        request: CreateRequest<'_>,
        sink: Option<Box<dyn EventSink>>,
    ) -> Result<Admitted<'s>, Refusal> {
        let CreateRequest { body, parsed, generate, previous } = request;
        if !caller.rate_counted {
            self.admission.request(caller.key).map_err(Refusal::Limited)?;
        }
        // A stream slot of the key (a background stream holds it while it is followed),
        // then, for a foreground turn, an upstream slot; both held until the turn ends.
        let streamed = sink.is_some() || parsed.stream == Some(true);
        let stream_permit = match streamed.then(|| self.admission.stream(caller.key)) {
            Some(Err(refused)) => return Err(Refusal::Limited(refused)),
            Some(Ok(p)) => p,
            None => None,
        };
        // A background request's worker takes its slot when it runs; a warm-up calls no model.
        let upstream_permit = if parsed.background == Some(true) || !generate {
            UpstreamPermit::none()
        } else {
            self.admission.upstream().await.map_err(Refusal::Limited)?
        };
        let ctx = self.context(caller.project, Origin::Request, previous);
        // The turn's futures are boxed (prepare's state is ~8 KB, the run's ~6 KB): the
        // caller's own future stays small.
        let mut prepared = Box::pin(turn::prepare(parsed, body, &ctx)).await?;
        prepared.generate = generate;
        // A connection that keeps its responses keeps stored ones too.
        prepared.keep_transcript = matches!(previous, Previous::Kept(_));
        if prepared.base.background {
            // Queued and answered at once; a worker runs it. Streamed, the answer follows
            // the run's event log, as a resume would: a client that leaves does not stop it.
            let stream = prepared.stream;
            let response = self.background.submit(caller.project, body, prepared, stream).await?;
            let events = stream.then(|| self.background.follow_new(caller.project, &response.id, stream_permit));
            return Ok(Admitted::Queued { response: Box::new(response), events });
        }
        Ok(Admitted::Started(self.start_turn(prepared, sink, Permits(stream_permit, upstream_permit))))
    }

    /// The spawn/cancel policy of a prepared foreground turn.
    fn start_turn<'s>(self: &'s Arc<Self>, mut prepared: Prepared, sink: Option<Box<dyn EventSink>>, permits: Permits) -> Turn<'s> {
        prepared.cancel = self.shutdown.child_token();
        let cancel = prepared.cancel.clone();
        let client_left = prepared.client_left.clone();
        let streamed = sink.is_some();
        // The first events are queued before the turn runs, so the transport's first write
        // carries them.
        let turn = driver::start(prepared, sink);
        let stored = turn.is_stored();
        if !streamed && !stored {
            return Turn { run: Running::Inline { turn, app: self, permits }, attached: Attached::default(), stored };
        }
        // Boxed before spawning: the task moves a pointer, not the turn's state. (The
        // turn's span, made by `driver::start`, is the caller's span's child.)
        let app = self.clone();
        let task = self.turns.spawn(Box::pin(async move {
            // A failed commit has ended a stream with `response.failed` (and was logged).
            let outcome = turn.run(&app.runner).await;
            drop(permits);
            outcome
        }));
        // A client that leaves stops the turn (its upstream request and gateway calls); a
        // stored one is committed `incomplete` with what it had.
        Turn { run: Running::Spawned(task), attached: Attached(Some((cancel, client_left))), stored }
    }
}

/// A background worker prepares its run's request as a create request of the run's project
/// is prepared (the same context), without admission (the run holds its slot) or a sink.
impl crate::background::PrepareRun for App {
    fn prepare_run<'a>(&'a self, project: &'a str, body: &'a [u8]) -> BoxFuture<'a, Result<Prepared, GatewayError>> {
        Box::pin(async move {
            let req = turn::parse_request(body)?;
            let ctx = self.context(project, Origin::Worker, Previous::Store);
            Box::pin(turn::prepare(req, body, &ctx)).await
        })
    }
}
