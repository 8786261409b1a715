//! Pages whose records travel by descriptor: the worker reads its page's byte range from the
//! artifact itself, and refuses ranges and tables that do not hold together.

use super::pool::worker_command;
use super::single;
use runx_worker::{
    ByteRange, Call, FailureCode, LeaseError, PagePayload, PageRecords, Pool, PoolConfig,
};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::Arc;

const ECHO_RECORDS: &str =
    "export default (i) => ({ records: i.runx_page.records, index: i.runx_page.page_index });";

fn artifact(bytes: &[u8]) -> (tempfile::TempDir, Arc<std::fs::File>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.json");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    let file = Arc::new(std::fs::File::open(&path).unwrap());
    (dir, file)
}

fn page_call(records: PageRecords) -> Call {
    let mut call = Call::new(single(ECHO_RECORDS), None, b"{}".to_vec());
    call.page = Some(PagePayload {
        meta: br#"{"page_index":3,"state":null}"#.to_vec(),
        records,
        keep_state: false,
        state_from: None,
        run: None,
    });
    call
}

#[test]
fn records_are_read_from_the_artifact_range() {
    let pool = Pool::new(PoolConfig::new(worker_command()).size(1)).unwrap();
    let (_dir, file) = artifact(b"x = [1, {\"a\": \"b\"},  \"three\" ]");
    // The range starts at the first record (byte 5) and ends after the last one.
    let call = page_call(PageRecords::Range {
        file: file.clone(),
        range: ByteRange { offset: 5, len: 24 },
        spans: vec![(0, 1), (3, 13), (16, 23)],
    });
    let reply = pool.call(&call).unwrap();
    let out: Value = serde_json::from_slice(&reply.output).unwrap();
    assert_eq!(
        out,
        json!({"records": ["1", "{\"a\": \"b\"}", "\"three\""], "index": 3})
    );
    // The same worker serves the next page.
    let again = pool.call(&call).unwrap();
    assert_eq!(again.worker_pid, reply.worker_pid);
}

#[test]
fn ranges_and_tables_that_do_not_hold_together_are_refused() {
    let pool = Pool::new(PoolConfig::new(worker_command()).size(1)).unwrap();
    let (_dir, file) = artifact(b"[1, 2, 3]");
    let cases = [
        // Past the end of the file.
        (
            ByteRange {
                offset: 4,
                len: 100,
            },
            vec![(0, 1)],
            "inside a regular file",
        ),
        // A span beyond its range.
        (ByteRange { offset: 1, len: 4 }, vec![(0, 9)], "span table"),
        // Spans out of order.
        (
            ByteRange { offset: 1, len: 7 },
            vec![(3, 4), (0, 1)],
            "span table",
        ),
    ];
    for (range, spans, needle) in cases {
        let e = pool
            .call(&page_call(PageRecords::Range {
                file: file.clone(),
                range,
                spans,
            }))
            .unwrap_err();
        assert_eq!(e.failure.code, FailureCode::InvalidRequest, "{e}");
        assert!(e.failure.message.contains(needle), "{needle}: {e}");
    }
    // Nothing above cost the worker: it still serves.
    let ok = pool.call(&page_call(PageRecords::Range {
        file,
        range: ByteRange { offset: 1, len: 7 },
        spans: vec![(0, 1), (3, 4), (6, 7)],
    }));
    let out: Value = serde_json::from_slice(&ok.unwrap().output).unwrap();
    assert_eq!(out["records"], json!(["1", "2", "3"]));
}

#[test]
fn a_descriptor_page_weighs_what_an_inline_page_weighs() {
    let (_dir, file) = artifact(b"[1, 2, 3]");
    let range = page_call(PageRecords::Range {
        file,
        range: ByteRange { offset: 1, len: 7 },
        spans: vec![(0, 1), (3, 4), (6, 7)],
    });
    let inline = page_call(PageRecords::Inline {
        ends: vec![1, 2, 3],
        blob: b"123".to_vec(),
    });
    assert_eq!(range.input_bytes(), inline.input_bytes());
}

#[test]
fn ranges_across_memory_pages_read_exactly_and_no_map_outlives_its_call() {
    let pool = Pool::new(PoolConfig::new(worker_command()).size(1)).unwrap();
    // Records straddling the 4 KiB boundaries of the file, at offsets no map would align to.
    let mut bytes = vec![b' '; 12_000];
    let records: [(usize, &[u8]); 3] = [
        (4090, b"\"across\""),
        (8190, b"[8190]"),
        (11_990, b"{\"end\":1}"),
    ];
    for (at, r) in records {
        bytes[at..at + r.len()].copy_from_slice(r);
    }
    let (dir, file) = artifact(&bytes);
    let base = 4090u64;
    let spans: Vec<(u32, u32)> = records
        .iter()
        .map(|(at, r)| {
            (
                (*at as u64 - base) as u32,
                (*at as u64 - base) as u32 + r.len() as u32,
            )
        })
        .collect();
    let call = page_call(PageRecords::Range {
        file,
        range: ByteRange {
            offset: base,
            len: 11_999 - base,
        },
        spans,
    });
    let mut pid = 0;
    for _ in 0..20 {
        let reply = pool.call(&call).unwrap();
        let out: Value = serde_json::from_slice(&reply.output).unwrap();
        assert_eq!(
            out["records"],
            json!(["\"across\"", "[8190]", "{\"end\":1}"])
        );
        pid = reply.worker_pid;
    }
    // Between calls the worker maps nothing of the artifact.
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let name = dir.path().join("a.json");
    assert!(
        !maps.contains(name.to_str().unwrap()),
        "the artifact is still mapped:\n{maps}"
    );
}

/// Sums the records into the state; ends the run when a record is 0.
const SUM_RECORDS: &str = "export default (i) => {
  const p = i.runx_page;
  let s = p.state ?? { sum: 0 };
  for (const r of p.records) { if (JSON.parse(r) === 0) return { runx_page: { state: s, done: true } }; s = { sum: s.sum + JSON.parse(r) }; }
  return { runx_page: { state: s } };
};";

/// Page `index` of a `[1, 2, 3, 0]`-like artifact: one record at `offset`, its metadata cut
/// before the state unless `state` is given.
fn ahead_call(
    file: &Arc<std::fs::File>,
    offset: u64,
    state: Option<&str>,
    from: Option<u64>,
) -> Call {
    let mut call = Call::new(single(SUM_RECORDS), None, b"{}".to_vec());
    let mut meta = br#"{"page_index":0,"state":"#.to_vec();
    if let Some(state) = state {
        meta.extend_from_slice(state.as_bytes());
        meta.push(b'}');
    }
    call.page = Some(PagePayload {
        meta,
        records: PageRecords::Range {
            file: file.clone(),
            range: ByteRange { offset, len: 1 },
            spans: vec![(0, 1)],
        },
        keep_state: true,
        state_from: from,
        run: None,
    });
    call
}

#[test]
fn a_page_sent_ahead_takes_the_state_the_worker_kept_and_reports_its_digest() {
    let pool = Pool::new(PoolConfig::new(worker_command()).size(1)).unwrap();
    let (_dir, file) = artifact(b"[1,2,3]");
    let cancel = runx_worker::CancelToken::new();
    let mut lease = pool.lease(&single(SUM_RECORDS).digest(), &cancel).unwrap();
    assert!(lease.pages_by_descriptor());
    let first = ahead_call(&file, 1, Some("null"), None);
    let a = lease.send(&first).unwrap();
    // Sent before the first reply is read: the worker gives it the first page's state.
    let second = ahead_call(&file, 3, None, Some(a));
    let b = lease.send(&second).unwrap();
    let third = ahead_call(&file, 5, None, Some(b));
    let c = lease.send(&third).unwrap();
    let ra = lease.receive(a, &first, None).unwrap();
    assert_eq!(ra.state_digest, None);
    let one = digest(r#"{"sum":1}"#);
    let rb = lease.receive(b, &second, Some(&one)).unwrap();
    assert_eq!(rb.state_digest.as_deref(), Some(one.as_str()));
    let rc = lease
        .receive(c, &third, Some(&digest(r#"{"sum":3}"#)))
        .unwrap();
    let out: Value = serde_json::from_slice(&rc.output).unwrap();
    assert_eq!(out, json!({"runx_page": {"state": {"sum": 6}}}));
    let pid = ra.worker_pid;
    assert!(rb.worker_pid == pid && rc.worker_pid == pid);
    drop(lease);
    // Nothing was owed: the worker went back to the pool.
    assert_eq!(pool.call(&first).unwrap().worker_pid, pid);
}

#[test]
fn a_kept_state_goes_only_to_the_next_call_and_not_after_a_run_ends() {
    let pool = Pool::new(PoolConfig::new(worker_command()).size(1)).unwrap();
    // The second record, 0, ends the run (`done`): nothing is kept for a page after it.
    let (_dir, file) = artifact(b"[5,0,7]");
    let cancel = runx_worker::CancelToken::new();
    let refused = |e: LeaseError| match e {
        LeaseError::Failed(e) => {
            assert_eq!(e.failure.code, FailureCode::InvalidRequest, "{e:?}");
            assert!(e.failure.message.contains("does not hold"), "{e:?}");
        }
        other => panic!("{other:?}"),
    };
    let mut lease = pool.lease(&single(SUM_RECORDS).digest(), &cancel).unwrap();
    let first = ahead_call(&file, 1, Some("null"), None);
    let a = lease.send(&first).unwrap();
    let done = ahead_call(&file, 3, None, Some(a));
    let b = lease.send(&done).unwrap();
    let after = ahead_call(&file, 5, None, Some(b));
    let c = lease.send(&after).unwrap();
    lease.receive(a, &first, None).unwrap();
    let rb = lease
        .receive(b, &done, Some(&digest(r#"{"sum":5}"#)))
        .unwrap();
    let out: Value = serde_json::from_slice(&rb.output).unwrap();
    assert_eq!(out["runx_page"]["done"], json!(true));
    refused(lease.receive(c, &after, None).unwrap_err());
    // A state is kept for the very next call only, and only for the call that names it.
    let d = lease.send(&first).unwrap();
    let skipped = ahead_call(&file, 5, None, Some(d));
    let e = lease.send(&skipped).unwrap();
    let wrong = ahead_call(&file, 5, None, Some(d));
    let f = lease.send(&wrong).unwrap();
    lease.receive(d, &first, None).unwrap();
    let pid = lease
        .receive(e, &skipped, Some(&digest(r#"{"sum":5}"#)))
        .unwrap()
        .worker_pid;
    refused(lease.receive(f, &wrong, None).unwrap_err());
    // A run that ends while a page is ahead: the page is refused at once, and the worker,
    // its answer read, goes back to the pool instead of being retired.
    let ends = ahead_call(&file, 3, Some("null"), None);
    let g = lease.send(&ends).unwrap();
    lease.send(&ahead_call(&file, 5, None, Some(g))).unwrap();
    lease.receive(g, &ends, None).unwrap();
    drop(lease);
    assert_eq!(pool.call(&first).unwrap().worker_pid, pid);
}

#[test]
fn a_reply_that_names_another_state_than_the_hosts_is_retried_and_the_worker_retired() {
    let pool = Pool::new(PoolConfig::new(worker_command()).size(1)).unwrap();
    let (_dir, file) = artifact(b"[1,2,3]");
    let cancel = runx_worker::CancelToken::new();
    let mut lease = pool.lease(&single(SUM_RECORDS).digest(), &cancel).unwrap();
    let first = ahead_call(&file, 1, Some("null"), None);
    let a = lease.send(&first).unwrap();
    let second = ahead_call(&file, 3, None, Some(a));
    let b = lease.send(&second).unwrap();
    let pid = lease.receive(a, &first, None).unwrap().worker_pid;
    // The host holds {"sum":2}; the worker gave the page {"sum":1}.
    match lease.receive(b, &second, Some(&digest(r#"{"sum":2}"#))) {
        Err(LeaseError::Retry(why)) => assert!(why.contains("state other than"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Nothing more goes to that worker, and the pool does not get it back.
    assert!(matches!(lease.send(&first), Err(LeaseError::Retry(_))));
    drop(lease);
    assert_ne!(pool.call(&first).unwrap().worker_pid, pid);
    // A refusal names no state at all: for a host that expects one, that is no answer either.
    let mut lease = pool.lease(&single(SUM_RECORDS).digest(), &cancel).unwrap();
    let orphan = ahead_call(&file, 3, None, Some(1));
    let c = lease.send(&orphan).unwrap();
    assert!(matches!(
        lease.receive(c, &orphan, Some(&digest("null"))),
        Err(LeaseError::Retry(_))
    ));
}

fn digest(state: &str) -> String {
    runx_worker::state_digest(state.as_bytes())
}

#[test]
fn a_request_too_large_to_wait_in_the_pipe_is_not_sent_ahead_and_the_worker_stays() {
    let pool = Pool::new(PoolConfig::new(worker_command()).size(1)).unwrap();
    let (_dir, file) = artifact(b"[1,2,3]");
    let cancel = runx_worker::CancelToken::new();
    let mut lease = pool.lease(&single(SUM_RECORDS).digest(), &cancel).unwrap();
    let first = ahead_call(&file, 1, Some("null"), None);
    let a = lease.send(&first).unwrap();
    // 2 MiB of input: more than half of any pipe the worker can have.
    let mut big = ahead_call(&file, 3, None, Some(a));
    big.input = format!(r#"{{"pad":"{}"}}"#, "x".repeat(2 << 20)).into_bytes();
    match lease.send(&big) {
        Err(LeaseError::Retry(why)) => assert!(why.contains("pipe"), "{why}"),
        other => panic!("{other:?}"),
    }
    // The call already sent still answers, and the worker goes back to the pool.
    let ra = lease.receive(a, &first, None).unwrap();
    drop(lease);
    assert_eq!(pool.call(&first).unwrap().worker_pid, ra.worker_pid);
}
