//! A conversation's lease, held while a turn runs on it (contract §1.1: one turn at a time
//! per conversation; a second one is a 409).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::store::Store;

/// A held conversation lease. A background task renews it every third of its lifetime
/// while the turn runs; dropping it releases it unless the turn's commit already did.
#[derive(Debug)]
pub struct Lease {
    store: Arc<dyn Store>,
    pub conversation_id: String,
    /// The lease token stored in `conversations.lease_owner`.
    pub owner: String,
    renewer: tokio::task::AbortHandle,
    settled: AtomicBool,
}

impl Lease {
    pub(crate) fn start(store: Arc<dyn Store>, conversation_id: String, owner: String, ttl_ms: u64) -> Lease {
        let (s, c, o) = (store.clone(), conversation_id.clone(), owner.clone());
        let period = Duration::from_millis((ttl_ms / 3).max(1));
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                match s.renew_lease(&c, &o, ttl_ms).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(conversation = %c, "conversation lease lost while the turn runs");
                        break;
                    }
                    Err(e) => tracing::warn!(conversation = %c, error = %e, "renewing the conversation lease failed"),
                }
            }
        });
        Lease { store, conversation_id, owner, renewer: task.abort_handle(), settled: AtomicBool::new(false) }
    }

    /// The commit released the lease in its transaction: nothing left to do on drop.
    pub fn settled(&self) {
        self.renewer.abort();
        self.settled.store(true, Ordering::SeqCst);
    }

    /// Releases the lease now (a turn that will not run).
    pub async fn release(&self) {
        self.renewer.abort();
        if !self.settled.swap(true, Ordering::SeqCst) {
            if let Err(e) = self.store.release_lease(&self.conversation_id, &self.owner).await {
                tracing::warn!(conversation = %self.conversation_id, error = %e, "releasing the conversation lease failed");
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
        if self.settled.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (s, c, o) = (self.store.clone(), self.conversation_id.clone(), self.owner.clone());
            rt.spawn(async move {
                let _ = s.release_lease(&c, &o).await;
            });
        }
    }
}

