//! One rule wherever a caller's JSON enters: a message whose objects name a key twice is
//! refused, as `runx serve` refuses such a line and `runx skill --inputs` such a file.
//!
//! rmcp parses messages with serde_json, which keeps the last of duplicate keys, so
//! `{"name":"Alice","name":"Mallory"}` in a `tools/call` ran as Mallory while a log or a proxy
//! reading the first saw Alice. The check runs on the text before rmcp sees it: over HTTP on
//! the request body ([`screen_body`]), over stdio on each line ([`Screened`], which hands rmcp a
//! notification of its own in place of the refused line so that the session answers it in
//! order). The answer is JSON-RPC's parse error (`-32700`) with a null id, as `runx serve`
//! gives: a message that names `id` twice has no one id to answer.

use serde_json::{Value, json};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// The method of the notification that stands in for a refused stdio line.
pub(crate) const REFUSED_METHOD: &str = "notifications/runx/duplicate_key";

/// Why `text` is refused: a key named twice (with where), or `None` when it is not refused.
/// Text that is not JSON is not this check's to answer: rmcp answers or drops it as before.
pub(crate) fn duplicate_key(text: &[u8]) -> Option<String> {
    match runx_receipts::check_unique(text) {
        Err(e) if e.is_data() => Some(format!(
            "{e}: a message names each key once (runx refuses duplicate keys wherever a caller's JSON enters)"
        )),
        _ => None,
    }
}

/// The JSON-RPC error that answers a refused message.
pub(crate) fn refusal(message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": message}})
}

/// The answer to an HTTP request body that names a key twice, if it does.
pub(crate) fn screen_body(body: &[u8]) -> Option<Value> {
    duplicate_key(body).map(|m| refusal(&m))
}

/// Stdin with every line checked: a line that names a key twice reaches rmcp as a
/// [`REFUSED_METHOD`] notification carrying the refusal, which the session answers. Lines
/// longer than `max_line` pass through unheld, for rmcp to drop.
pub(crate) struct Screened<R> {
    inner: R,
    max_line: usize,
    /// The current line, while it is shorter than `max_line`.
    line: Vec<u8>,
    /// Passing the rest of a line too long to hold straight through.
    passing: bool,
    /// Bytes ready for the reader.
    ready: Vec<u8>,
    at: usize,
    /// Notifications put in place of refused lines and not yet answered: no more stand-ins
    /// are answered than lines were refused, so a client that sends notifications of that
    /// name gets no answers beyond those its own refused lines owe it.
    pub(crate) owed: Arc<AtomicU64>,
}

impl<R> Screened<R> {
    pub(crate) fn new(inner: R, max_line: usize) -> Screened<R> {
        Screened {
            inner,
            max_line,
            line: Vec::new(),
            passing: false,
            ready: Vec::new(),
            at: 0,
            owed: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Takes in bytes read from the inner reader.
    fn take(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n');
            let (head, tail) = match end {
                Some(i) => rest.split_at(i + 1),
                None => (rest, &rest[rest.len()..]),
            };
            rest = tail;
            if self.passing {
                self.ready.extend_from_slice(head);
                self.passing = end.is_none();
                continue;
            }
            if self.line.len() + head.len() > self.max_line {
                // Too long to hold: what is held and the rest go through, for rmcp to drop.
                self.ready.append(&mut self.line);
                self.ready.extend_from_slice(head);
                self.passing = end.is_none();
                continue;
            }
            self.line.extend_from_slice(head);
            if end.is_some() {
                self.finish_line();
            }
        }
    }

    fn finish_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        match duplicate_key(&line) {
            None => self.ready.extend_from_slice(&line),
            Some(message) => {
                self.owed.fetch_add(1, Ordering::SeqCst);
                let stand_in = json!({
                    "jsonrpc": "2.0",
                    "method": REFUSED_METHOD,
                    "params": {"message": message},
                });
                self.ready
                    .extend_from_slice(stand_in.to_string().as_bytes());
                self.ready.push(b'\n');
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Screened<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.at < this.ready.len() {
                let n = (this.ready.len() - this.at).min(buf.remaining());
                buf.put_slice(&this.ready[this.at..this.at + n]);
                this.at += n;
                if this.at == this.ready.len() {
                    this.ready.clear();
                    this.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let filled = read.filled();
                    if filled.is_empty() {
                        // End of input: a last line without a newline goes as it is.
                        if this.line.is_empty() {
                            return Poll::Ready(Ok(()));
                        }
                        let last = std::mem::take(&mut this.line);
                        this.ready.extend_from_slice(&last);
                        continue;
                    }
                    let filled = filled.to_vec();
                    this.take(&filled);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn screened(input: &[u8], max_line: usize) -> (String, u64) {
        let mut s = Screened::new(input, max_line);
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.expect("read");
        (
            String::from_utf8(out).expect("utf-8"),
            s.owed.load(Ordering::SeqCst),
        )
    }

    #[tokio::test]
    async fn lines_that_name_a_key_twice_become_a_refusal_and_the_rest_pass() {
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"name":"Alice","name":"Mallory"}}}"#,
            "\n",
            "not json\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        );
        let (out, owed) = screened(input.as_bytes(), 1 << 20).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[0], r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let stand_in: Value = serde_json::from_str(lines[1]).expect("json");
        assert_eq!(stand_in["method"], REFUSED_METHOD);
        let message = stand_in["params"]["message"].as_str().expect("message");
        assert!(message.starts_with("duplicate key `name`"), "{message}");
        assert_eq!(lines[2], "not json");
        assert_eq!(lines[3], r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
        assert_eq!(owed, 1);
    }

    #[tokio::test]
    async fn a_line_too_long_to_hold_passes_unheld() {
        let long = format!("{{\"a\":\"{}\",\"a\":1}}\n", "x".repeat(100));
        let (out, owed) = screened(long.as_bytes(), 50).await;
        assert_eq!(out, long);
        assert_eq!(owed, 0);
    }

    #[test]
    fn bodies_are_screened_alike() {
        let refused =
            screen_body(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#).expect("refused");
        assert_eq!(refused["error"]["code"], -32700);
        assert!(refused["id"].is_null());
        assert!(screen_body(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
        assert!(screen_body(b"{not json").is_none());
    }
}
