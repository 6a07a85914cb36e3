//! A response body made item by item on blocking threads: each archived segment (or
//! its MP4 fragment) is read from disk or the bucket when the body before it has been
//! sent, so an export holds one segment in memory whatever its length, and the runtime's
//! threads never wait on a file.

use bytes::Bytes;
use futures_util::Stream;

/// The body of `items`, each turned into its bytes by `job` on a blocking thread, in
/// order; an item that fails ends the body with that error (the client sees a cut
/// download, never wrong bytes).
pub fn blocking_chunks<T, F>(
    items: Vec<T>,
    job: F,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static
where
    T: Send + 'static,
    F: Fn(T) -> std::io::Result<Bytes> + Clone + Send + Sync + 'static,
{
    futures_util::stream::unfold((job, items.into_iter()), |(job, mut rest)| async move {
        let item = rest.next()?;
        let for_item = job.clone();
        let chunk = match tokio::task::spawn_blocking(move || for_item(item)).await {
            Ok(result) => result,
            Err(join) => Err(std::io::Error::other(join)),
        };
        Some((chunk, (job, rest)))
    })
}
