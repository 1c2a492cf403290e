//! The store decorator that times every store operation
//! (`gateway_store_operation_duration_seconds{op}`): the store's one natural place to time,
//! since every operation goes through the [`Store`] trait.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::BoxFuture;
use metrics::{Histogram, Label};
use serde_json::Value;

use super::{names, Metrics};
use crate::store::BackendKind;
use crate::store::{
    ClaimedRun, Conversation, ConversationContext, LeaseOutcome, ListQuery, Lookup, NewConversation, Page, PrivateResults, RunCancel,
    Store, StoreError, TurnRecord,
};
use crate::transcript::Transcript;

/// The operations, in the order of [`OPS`].
#[derive(Clone, Copy)]
enum Op {
    Ping,
    Transcript,
    Response,
    DeleteResponse,
    ToolResults,
    InputItems,
    SaveTurn,
    CreateConversation,
    Conversation,
    UpdateConversation,
    DeleteConversation,
    AddItems,
    ListItems,
    Item,
    DeleteItem,
    Lease,
    RenewLease,
    ReleaseLease,
    ConversationContext,
    EnqueueRun,
    ClaimRun,
    RunResponse,
    BeatRun,
    CancelRun,
    FinishRun,
    FailRun,
    AppendEvents,
    EventsAfter,
    ExpiredRuns,
    ReapRun,
    DeleteRun,
    RunRequest,
    RequeueRun,
    AnswerApprovals,
    StoredItem,
    InChain,
}

const OPS: [&str; 36] = [
    "ping",
    "transcript",
    "response",
    "delete_response",
    "tool_results",
    "input_items",
    "save_turn",
    "create_conversation",
    "conversation",
    "update_conversation",
    "delete_conversation",
    "add_items",
    "list_items",
    "item",
    "delete_item",
    "lease",
    "renew_lease",
    "release_lease",
    "conversation_context",
    "enqueue_run",
    "claim_run",
    "run_response",
    "beat_run",
    "cancel_run",
    "finish_run",
    "fail_run",
    "append_events",
    "events_after",
    "expired_runs",
    "reap_run",
    "delete_run",
    "run_request",
    "requeue_run",
    "answer_approvals",
    "stored_item",
    "in_chain",
];

/// A [`Store`] that records how long each operation of `inner` takes.
pub struct TimedStore {
    inner: Arc<dyn Store>,
    histograms: Vec<Histogram>,
}

impl std::fmt::Debug for TimedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimedStore").field("inner", &self.inner).finish()
    }
}

impl TimedStore {
    /// `inner`, timed into `metrics`.
    pub fn new(inner: Arc<dyn Store>, metrics: &Metrics) -> TimedStore {
        let histograms = OPS.iter().map(|op| metrics.histogram(names::STORE_DURATION, vec![Label::from_static_parts("op", op)])).collect();
        TimedStore { inner, histograms }
    }

    fn time<'a, T: Send + 'a>(&'a self, op: Op, f: impl Future<Output = T> + Send + 'a) -> BoxFuture<'a, T> {
        Box::pin(async move {
            let start = Instant::now();
            let out = f.await;
            if let Some(h) = self.histograms.get(op as usize) {
                h.record(start.elapsed().as_secs_f64());
            }
            out
        })
    }
}

impl Store for TimedStore {
    fn backend(&self) -> BackendKind {
        self.inner.backend()
    }
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.time(Op::Ping, self.inner.ping())
    }
    fn transcript<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Transcript>, StoreError>> {
        self.time(Op::Transcript, self.inner.transcript(project, id))
    }
    fn response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        self.time(Op::Response, self.inner.response(project, id))
    }
    fn delete_response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.time(Op::DeleteResponse, self.inner.delete_response(project, id))
    }
    fn tool_results<'a>(&'a self, project: &'a str, item_ids: &'a [String]) -> BoxFuture<'a, Result<PrivateResults, StoreError>> {
        self.time(Op::ToolResults, self.inner.tool_results(project, item_ids))
    }
    fn input_items<'a>(&'a self, project: &'a str, id: &'a str, q: &'a ListQuery) -> BoxFuture<'a, Result<Option<Page>, StoreError>> {
        self.time(Op::InputItems, self.inner.input_items(project, id, q))
    }
    fn answer_approvals<'a>(&'a self, project: &'a str, answers: crate::store::Answers<'a>) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        self.time(Op::AnswerApprovals, self.inner.answer_approvals(project, answers))
    }
    fn save_turn(&self, turn: TurnRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        self.time(Op::SaveTurn, self.inner.save_turn(turn))
    }
    fn create_conversation(&self, new: NewConversation) -> BoxFuture<'_, Result<(), StoreError>> {
        self.time(Op::CreateConversation, self.inner.create_conversation(new))
    }
    fn conversation<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Conversation>, StoreError>> {
        self.time(Op::Conversation, self.inner.conversation(project, id))
    }
    fn update_conversation<'a>(
        &'a self,
        project: &'a str,
        id: &'a str,
        metadata: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Option<Conversation>, StoreError>> {
        self.time(Op::UpdateConversation, self.inner.update_conversation(project, id, metadata))
    }
    fn delete_conversation<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.time(Op::DeleteConversation, self.inner.delete_conversation(project, id))
    }
    fn add_items<'a>(&'a self, project: &'a str, id: &'a str, items: Vec<Value>) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.time(Op::AddItems, self.inner.add_items(project, id, items))
    }
    fn list_items<'a>(&'a self, project: &'a str, id: &'a str, q: &'a ListQuery) -> BoxFuture<'a, Result<Option<Page>, StoreError>> {
        self.time(Op::ListItems, self.inner.list_items(project, id, q))
    }
    fn item<'a>(&'a self, project: &'a str, id: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Lookup<Value>, StoreError>> {
        self.time(Op::Item, self.inner.item(project, id, item_id))
    }
    fn stored_item<'a>(&'a self, project: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Option<crate::store::FoundItem>, StoreError>> {
        self.time(Op::StoredItem, self.inner.stored_item(project, item_id))
    }
    fn in_chain<'a>(&'a self, project: &'a str, last: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.time(Op::InChain, self.inner.in_chain(project, last, id))
    }
    fn delete_item<'a>(&'a self, project: &'a str, id: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Lookup<Conversation>, StoreError>> {
        self.time(Op::DeleteItem, self.inner.delete_item(project, id, item_id))
    }
    fn lease<'a>(&'a self, project: &'a str, id: &'a str, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<LeaseOutcome, StoreError>> {
        self.time(Op::Lease, self.inner.lease(project, id, owner, ttl_ms))
    }
    fn renew_lease<'a>(&'a self, id: &'a str, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.time(Op::RenewLease, self.inner.renew_lease(id, owner, ttl_ms))
    }
    fn release_lease<'a>(&'a self, id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.time(Op::ReleaseLease, self.inner.release_lease(id, owner))
    }
    fn enqueue_run(
        &self,
        project: &str,
        id: &str,
        request: String,
        response: String,
        max_queued: usize,
        frames: Vec<String>,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.time(Op::EnqueueRun, self.inner.enqueue_run(project, id, request, response, max_queued, frames))
    }
    fn fail_run<'a>(&'a self, id: &'a str, owner: &'a str, response: String) -> BoxFuture<'a, Result<(), StoreError>> {
        self.time(Op::FailRun, self.inner.fail_run(id, owner, response))
    }
    fn claim_run<'a>(&'a self, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<Option<ClaimedRun>, StoreError>> {
        self.time(Op::ClaimRun, self.inner.claim_run(owner, ttl_ms))
    }
    fn run_response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        self.time(Op::RunResponse, self.inner.run_response(project, id))
    }
    fn beat_run<'a>(&'a self, id: &'a str, owner: &'a str, ttl_ms: u64, response: Option<String>) -> BoxFuture<'a, Result<Option<bool>, StoreError>> {
        self.time(Op::BeatRun, self.inner.beat_run(id, owner, ttl_ms, response))
    }
    fn cancel_run<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<RunCancel, StoreError>> {
        self.time(Op::CancelRun, self.inner.cancel_run(project, id))
    }
    fn finish_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.time(Op::FinishRun, self.inner.finish_run(id))
    }
    fn delete_run<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<bool>, StoreError>> {
        self.time(Op::DeleteRun, self.inner.delete_run(project, id))
    }
    fn run_request<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        self.time(Op::RunRequest, self.inner.run_request(project, id))
    }
    fn requeue_run<'a>(&'a self, id: &'a str, owner: &'a str, delay_ms: u64) -> BoxFuture<'a, Result<(), StoreError>> {
        self.time(Op::RequeueRun, self.inner.requeue_run(id, owner, delay_ms))
    }
    fn append_events<'a>(&'a self, id: &'a str, first_seq: u64, frames: Vec<String>) -> BoxFuture<'a, Result<(), StoreError>> {
        self.time(Op::AppendEvents, self.inner.append_events(id, first_seq, frames))
    }
    fn events_after<'a>(&'a self, id: &'a str, after: Option<u64>, limit: usize) -> BoxFuture<'a, Result<Vec<(u64, String)>, StoreError>> {
        self.time(Op::EventsAfter, self.inner.events_after(id, after, limit))
    }
    fn expired_runs(&self, limit: usize) -> BoxFuture<'_, Result<Vec<(String, Value)>, StoreError>> {
        self.time(Op::ExpiredRuns, self.inner.expired_runs(limit))
    }
    fn reap_run<'a>(&'a self, id: &'a str, response: String) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.time(Op::ReapRun, self.inner.reap_run(id, response))
    }
    fn conversation_context<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<ConversationContext>, StoreError>> {
        self.time(Op::ConversationContext, self.inner.conversation_context(project, id))
    }
}
