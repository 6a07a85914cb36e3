//! The one future every task of a node or MC stops on.

use tokio::sync::watch;

/// Resolves when the shutdown flag is raised (or its sender is gone).
pub(crate) async fn until(mut shutdown: watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}
