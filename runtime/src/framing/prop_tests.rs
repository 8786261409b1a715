//! Property tests of the framer: generated JSON arrays page into tiles that deliver every
//! record exactly once, in order; arbitrary bytes never panic.

use super::scan::UTF8_BOM;
use super::tests::budget;
use super::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

fn json_strategy() -> impl Strategy<Value = Json> {
    let string = "[a-z\\]\\[{},:\"\\\\ \\t\\n\u{e9}\u{4e2d}\u{1f600}\u{7f}]{0,8}";
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::Int),
        (-1e6f64..1e6).prop_map(Json::Float),
        string.prop_map(Json::Str),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Arr),
            prop::collection::vec((string, inner), 0..6).prop_map(Json::Obj),
        ]
    })
}

/// Deterministic whitespace source so the serialization is reproducible
/// from proptest's shrinkable seed.
struct Ws(u64);

impl Ws {
    fn emit(&mut self, out: &mut Vec<u8>) {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let n = (self.0 % 8) as usize;
        for k in 0..n.saturating_sub(4) {
            out.push([b' ', b'\t', b'\n', b'\r'][(self.0 >> (8 + 2 * k)) as usize % 4]);
        }
    }
}

fn write_str(s: &str, ws: &mut Ws, out: &mut Vec<u8>) {
    ws.0 = ws.0.wrapping_add(1);
    if matches!(ws.0 % 3, 0) {
        // Fully \u-escaped form.
        out.push(b'"');
        for unit in s.encode_utf16() {
            out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(serde_json::to_string(s).expect("string").as_bytes());
    }
}

fn write_json(v: &Json, ws: &mut Ws, out: &mut Vec<u8>) {
    match v {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Json::Float(f) => out.extend_from_slice(serde_json::to_string(f).expect("f64").as_bytes()),
        Json::Str(s) => write_str(s, ws, out),
        Json::Arr(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                ws.emit(out);
                if n > 0 {
                    out.push(b',');
                    ws.emit(out);
                }
                write_json(item, ws, out);
            }
            ws.emit(out);
            out.push(b']');
        }
        Json::Obj(fields) => {
            out.push(b'{');
            for (n, (k, item)) in fields.iter().enumerate() {
                ws.emit(out);
                if n > 0 {
                    out.push(b',');
                    ws.emit(out);
                }
                write_str(k, ws, out);
                ws.emit(out);
                out.push(b':');
                ws.emit(out);
                write_json(item, ws, out);
            }
            ws.emit(out);
            out.push(b'}');
        }
    }
}

/// Builds a whole file; returns it and the byte range of every element.
fn build_file(values: &[Json], prefix: &str, bom: bool, seed: u64) -> (Vec<u8>, Vec<Range<usize>>) {
    let mut ws = Ws(seed | 1);
    let mut out = Vec::new();
    if bom {
        out.extend_from_slice(UTF8_BOM);
    }
    out.extend_from_slice(prefix.as_bytes());
    if prefix.is_empty() {
        ws.emit(&mut out);
    }
    out.push(b'[');
    let mut ranges = Vec::new();
    for (n, v) in values.iter().enumerate() {
        ws.emit(&mut out);
        if n > 0 {
            out.push(b',');
            ws.emit(&mut out);
        }
        let start = out.len();
        write_json(v, &mut ws, &mut out);
        ranges.push(start..out.len());
    }
    ws.emit(&mut out);
    out.push(b']');
    ws.emit(&mut out);
    (out, ranges)
}

/// Bytes that matter to the framer, often, and any byte now and then.
fn json_ish_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        Just(b'['),
        Just(b']'),
        Just(b'{'),
        Just(b'}'),
        Just(b'"'),
        Just(b'\\'),
        Just(b','),
        Just(b' '),
        Just(b'1'),
        Just(b':'),
        Just(0xffu8),
        any::<u8>(),
    ]
}

/// Everything framing `src` whole yields: the pages, then `None` or the error.
fn frame_whole(src: &[u8], b: &PageBudget) -> Vec<Result<Option<Page>, FramingError>> {
    let mut out = Vec::new();
    let mut framer = match Framer::new(src) {
        Ok(f) => f,
        Err(e) => return vec![Err(e)],
    };
    loop {
        let next = framer.next_page(b);
        let last = !matches!(next, Ok(Some(_)));
        out.push(next);
        if last || out.len() > src.len() + 2 {
            return out;
        }
    }
}

/// The same, with the bytes arriving in steps: each call sees a prefix that grows by the
/// next step (cycling through `steps`) whenever the framer asks for more.
fn frame_growing(
    src: &[u8],
    b: &PageBudget,
    steps: &[usize],
) -> Vec<Result<Option<Page>, FramingError>> {
    let mut step = steps.iter().cycle();
    let mut seen = 0usize;
    let mut grow =
        |seen: &mut usize| *seen = (*seen + step.next().copied().unwrap_or(1)).min(src.len());
    grow(&mut seen);
    let mut framer = loop {
        match Framer::from_prefix(&src[..seen], seen == src.len()) {
            Some(Ok(f)) => break f,
            Some(Err(e)) => return vec![Err(e)],
            None => grow(&mut seen),
        }
    };
    let mut out = Vec::new();
    loop {
        let next = match framer.next_page_from(&src[..seen], seen == src.len(), b) {
            Some(next) => next,
            None => {
                grow(&mut seen);
                continue;
            }
        };
        let last = !matches!(next, Ok(Some(_)));
        out.push(next);
        if last || out.len() > src.len() + 2 {
            return out;
        }
    }
}

proptest! {
    #![proptest_config(crate::proptest_config(512))]

    #[test]
    fn proptest_pages_tile_and_preserve_records(
        values in prop::collection::vec(json_strategy(), 0..24),
        prefix in prop_oneof![
            Just(""),
            Just("window.YTD.tweets.part0 = "),
            Just("x="),
            Just("a.$b_1 \t=\n "),
        ],
        bom in any::<bool>(),
        seed in any::<u64>(),
        // Mode 0: absolute (often too small -> RecordTooLarge); otherwise
        // relative to the largest record, so most cases page successfully.
        page_mode in 0u8..4,
        page_extra in prop_oneof![0usize..16, 16usize..400, 400usize..100_000],
        payload_mode in 0u8..4,
        payload_extra in prop_oneof![0usize..64, 64usize..2048],
        overhead in 0usize..32,
    ) {
        let (src, expected) = build_file(&values, prefix, bom, seed);
        let max_len = expected.iter().map(|r| r.len()).max().unwrap_or(0);
        let page_bytes = match page_mode {
            0 => page_extra,
            _ => max_len + page_extra / usize::from(page_mode),
        };
        let payload_bytes = match payload_mode {
            0 => usize::MAX,
            1 => payload_extra,
            _ => max_len + overhead + payload_extra / usize::from(payload_mode),
        };
        for r in &expected {
            // Sanity: our generator emits valid JSON.
            prop_assert!(serde_json::from_slice::<serde_json::Value>(&src[r.clone()]).is_ok());
        }
        let b = PageBudget { page_bytes, payload_bytes, per_record_overhead: overhead };
        let oversized = expected
            .iter()
            .find(|r| r.len() > page_bytes || r.len().saturating_add(overhead) > payload_bytes);

        let mut framer = Framer::new(&src).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut pages = Vec::new();
        let outcome = loop {
            match framer.next_page(&b) {
                Ok(Some(p)) => pages.push(p),
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
            prop_assert!(pages.len() <= expected.len() + 1);
        };

        if let Some(big) = oversized {
            match outcome {
                Err(FramingError::RecordTooLarge { offset, len, limit, .. }) => {
                    prop_assert_eq!(offset, big.start as u64);
                    prop_assert_eq!(len, big.len());
                    prop_assert_eq!(limit, b.max_record_len());
                }
                other => prop_assert!(false, "expected RecordTooLarge, got {:?}", other),
            }
            // Every page produced before the error is still well-formed.
            let got: Vec<_> = pages.iter().flat_map(|p| p.records.clone()).collect();
            prop_assert_eq!(&got[..], &expected[..got.len()]);
            return Ok(());
        }
        prop_assert!(outcome.is_ok(), "unexpected error {:?}", outcome);

        // Records: exactly once, in order, byte-identical.
        let got: Vec<_> = pages.iter().flat_map(|p| p.records.clone()).collect();
        prop_assert_eq!(&got, &expected);

        // Tiling and eof.
        prop_assert!(!pages.is_empty());
        prop_assert_eq!(pages[0].offset, 0);
        prop_assert_eq!(pages[pages.len() - 1].next_offset, src.len() as u64);
        for (n, p) in pages.iter().enumerate() {
            prop_assert_eq!(p.index as usize, n);
            prop_assert_eq!(p.eof, n == pages.len() - 1);
            if n + 1 < pages.len() {
                prop_assert_eq!(p.next_offset, pages[n + 1].offset);
            }
            if values.is_empty() {
                prop_assert!(p.records.is_empty());
            } else {
                prop_assert!(!p.records.is_empty());
            }
            // Both limits.
            if let (Some(first), Some(last)) = (p.records.first(), p.records.last()) {
                prop_assert!(last.end - first.start <= page_bytes);
            }
            let cost = p.records.iter().map(|r| r.len() + overhead).sum::<usize>();
            prop_assert!(cost <= payload_bytes);
        }
        if values.is_empty() {
            prop_assert_eq!(pages.len(), 1);
        }
        prop_assert_eq!(framer.next_page(&b), Ok(None));
    }

    /// The bound admission refuses a file by is a floor: no array the framer pages takes fewer
    /// pages than it says, whatever its head, whitespace, records and payload budget. Checked
    /// with the head's own significant bytes (the bound admission uses allows 64 KiB for it,
    /// which would make it zero for every array here), and as admission uses it.
    #[test]
    fn proptest_no_array_takes_fewer_pages_than_its_bound(
        values in prop::collection::vec(json_strategy(), 0..32),
        prefix in prop_oneof![Just(""), Just("window.YTD.tweets.part0 = "), Just("a.$b_1 \t=\n ")],
        bom in any::<bool>(),
        seed in any::<u64>(),
        page_extra in prop_oneof![0usize..8, 8usize..64, 64usize..400],
        payload in prop_oneof![Just(usize::MAX), 1usize..2048],
        overhead in 0usize..32,
    ) {
        let (src, ranges) = build_file(&values, prefix, bom, seed);
        let page_bytes = ranges.iter().map(|r| r.len()).max().unwrap_or(0).max(1) + page_extra;
        let b = PageBudget { page_bytes, payload_bytes: payload, per_record_overhead: overhead };
        let Ok(pages) = frame_whole(&src, &b).into_iter().collect::<Result<Vec<_>, _>>() else {
            // A record too large for the payload budget: the run fails anyway.
            return Ok(());
        };
        let pages = pages.iter().flatten().count() as u64;
        let significant = fit::significant_bytes(&src);
        let (open, _) = scan::parse_head(&src).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let head = fit::significant_bytes(&src[..=open]);
        prop_assert!(
            fit::least_pages_after(significant, head, page_bytes) <= pages,
            "{} pages of {} bytes: {}", pages, page_bytes, String::from_utf8_lossy(&src)
        );
        prop_assert!(fit::least_pages(significant, page_bytes) <= pages);
    }

    /// Pages filled exactly (records of one length, no whitespace, `page_bytes` a whole
    /// number of records and the commas between them) take as many pages as the bound says:
    /// a bound any higher would refuse files that fit.
    #[test]
    fn proptest_full_pages_meet_their_bound(
        n in 1usize..300,
        len in 1usize..12,
        k in 1usize..9,
        prefix in prop_oneof![Just(""), Just("x = ")],
    ) {
        let record = "7".repeat(len);
        let src = format!("{prefix}[{}]", vec![record.as_str(); n].join(","));
        let page_bytes = k * (len + 1) - 1;
        let pages = frame_whole(src.as_bytes(), &budget(page_bytes))
            .into_iter()
            .map(|p| p.map_err(|e| TestCaseError::fail(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .count() as u64;
        prop_assert_eq!(pages, n.div_ceil(k) as u64);
        let head = fit::significant_bytes(format!("{prefix}[").as_bytes());
        let significant = fit::significant_bytes(src.as_bytes());
        prop_assert_eq!(fit::least_pages_after(significant, head, page_bytes), pages);
    }

    /// Framing a file whose bytes arrive in steps yields exactly what framing it whole does:
    /// the same pages, the same error at the same offset.
    #[test]
    fn proptest_growing_prefixes_frame_like_the_whole_file(
        values in prop::collection::vec(json_strategy(), 0..16),
        prefix in prop_oneof![Just(""), Just("window.YTD.tweets.part0 = ")],
        bom in any::<bool>(),
        seed in any::<u64>(),
        damage in prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
        page_bytes in prop_oneof![1usize..64, 64usize..2048],
        steps in prop::collection::vec(1usize..300, 1..6),
    ) {
        let (mut src, _) = build_file(&values, prefix, bom, seed);
        if let Some((at, byte)) = damage {
            let i = at.index(src.len());
            src[i] = byte;
        }
        let b = budget(page_bytes);
        prop_assert_eq!(frame_growing(&src, &b, &steps), frame_whole(&src, &b));
    }

    /// The same for arbitrary bytes.
    #[test]
    fn proptest_growing_prefixes_of_arbitrary_bytes(
        body in prop::collection::vec(json_ish_byte(), 0..64),
        page_bytes in 1usize..32,
        steps in prop::collection::vec(1usize..8, 1..4),
    ) {
        let mut src = b"[".to_vec();
        src.extend_from_slice(&body);
        let b = budget(page_bytes);
        prop_assert_eq!(frame_growing(&src, &b, &steps), frame_whole(&src, &b));
    }

    /// A record found valid in one pass ([`json::value_end`], its UTF-8 included) ends where
    /// the scan ends it, and the validator (UTF-8 first) accepts it; everything else takes the
    /// scan and the validator as before. So the one pass changes no page and no error.
    #[test]
    fn proptest_one_pass_ends_records_where_the_scan_does(
        values in prop::collection::vec(json_strategy(), 1..8),
        seed in any::<u64>(),
        damage in prop::collection::vec((any::<prop::sample::Index>(), json_ish_byte()), 0..3),
        noise in prop::collection::vec(json_ish_byte(), 0..48),
        extra in any::<prop::sample::Index>(),
    ) {
        let (mut src, ranges) = build_file(&values, "", false, seed);
        for (at, byte) in damage {
            let i = at.index(src.len());
            src[i] = byte;
        }
        src.extend_from_slice(&noise);
        let mut framer = Framer::new(b"[").map_err(|e| TestCaseError::fail(e.to_string()))?;
        framer.src = &src;
        let mut starts: Vec<usize> = ranges.iter().map(|r| r.start).collect();
        starts.push(extra.index(src.len()));
        for start in starts {
            if let Some(end) = json::value_end(&src, start) {
                prop_assert_eq!(framer.scan_record(start, 0), Ok(end));
                prop_assert!(validate_record(&src, start, end, 0).is_ok());
            }
        }
    }

    /// Arbitrary bytes never panic and errors point inside the input.
    #[test]
    fn proptest_arbitrary_input_never_panics(
        body in prop::collection::vec(json_ish_byte(), 0..64),
        page_bytes in 0usize..32,
    ) {
        let mut src = b"[".to_vec();
        src.extend_from_slice(&body);
        if let Ok(mut framer) = Framer::new(&src) {
            let b = budget(page_bytes);
            let mut last_end = 0u64;
            for _ in 0..=src.len() + 1 {
                match framer.next_page(&b) {
                    Ok(Some(p)) => {
                        prop_assert_eq!(p.offset, last_end);
                        last_end = p.next_offset;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        prop_assert!(e.offset() <= src.len() as u64);
                        break;
                    }
                }
            }
        }
    }
}
