//! `runx skill DIR [RUNNER] --dry-run` without `--json`: the plan of a run that could start
//! (`runx_runtime::Runtime::plan`), as text on stdout. Every text that comes from a package or
//! a caller is printed so that no control character reaches the terminal.

use runx_runtime::{EnvOrigin, Plan};
use serde_json::Value;
use std::borrow::Cow;

/// Pages listed one by one in the text; past it, the first and last few and a count.
const PAGES_LISTED: usize = 20;
/// Bytes of the inputs' JSON shown in the text; `--json` has all of it.
const INPUTS_SHOWN: usize = 4096;

/// Prints `p` as text on stdout.
pub fn print_plan(p: &Plan) {
    outln!(
        "dry run of {} {} ({}): the run could start; nothing was started",
        word(&p.skill),
        word(&p.runner),
        p.runner_type
    );
    let version = if p.version.is_empty() {
        String::new()
    } else {
        format!(" {}", word(&p.version))
    };
    outln!(
        "package:      {} ({}{version})",
        word(&p.dir),
        word(&p.skill)
    );
    outln!("workspace:    {}", word(&p.workspace));
    // JSON escapes the C0 controls, not DEL or the C1 ones.
    let inputs = clipped(Value::Object(p.inputs.clone()).to_string());
    outln!("inputs:       {}", escaped(&inputs));
    outln!("input digest: {}", p.input_digest);
    outln!("environment:  {}", declared(p));
    outln!("timeout:      {} ms", p.timeout_ms);
    let limits: Vec<String> = p.limits.iter().map(|(k, v)| format!("{k}={v}")).collect();
    outln!("limits:       {}", limits.join(" "));
    if let Some(process) = &p.process {
        print_process(process);
    }
    if let Some(m) = &p.module {
        outln!("engine:       {}", m.engine);
        match &m.fold {
            Some(fold) => outln!(
                "module:       {} (map {}, fold {})",
                word(&m.entry),
                word(&m.export),
                word(fold)
            ),
            None => outln!(
                "module:       {} (export {})",
                word(&m.entry),
                word(&m.export)
            ),
        }
        outln!("bundle:       {}", m.bundle_digest);
        for f in &m.modules {
            outln!("  {} ({}, {})", word(&f.path), bytes(f.bytes), f.digest);
        }
    }
    if let Some(a) = &p.artifact {
        outln!(
            "artifact:     {} in the {} {} ({}, {})",
            word(&a.path),
            a.scope,
            word(&a.root),
            bytes(a.bytes),
            a.digest
        );
        outln!("media type:   {}", word(&a.media_type));
    }
    if let Some(pages) = &p.pages {
        print_pages(pages);
    }
}

fn print_process(p: &runx_runtime::ProcessPlan) {
    outln!("command:      {}", word(&p.command));
    outln!("program:      {}", word(&p.program));
    let argv: Vec<Cow<'_, str>> = p.argv.iter().map(|a| word(a)).collect();
    outln!("argv:         {}", argv.join(" "));
    for h in &p.hidden {
        outln!(
            "              argument {} holds the value of {} (not shown)",
            h.index,
            h.names
                .iter()
                .map(|n| word(n))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    outln!("cwd:          {}", word(&p.cwd));
    match p.stdin_bytes {
        Some(n) => outln!("stdin:        the inputs as JSON ({})", bytes(n)),
        None => outln!("stdin:        closed (input_mode {})", p.input_mode),
    }
    let mut groups: Vec<String> = Vec::new();
    for origin in [
        EnvOrigin::Baseline,
        EnvOrigin::Declared,
        EnvOrigin::Runx,
        EnvOrigin::Input,
    ] {
        let names: Vec<Cow<'_, str>> = p
            .environment
            .iter()
            .filter(|e| e.source == origin)
            .map(|e| word(&e.name))
            .collect();
        if !names.is_empty() {
            groups.push(format!("{} ({})", names.join(" "), origin.name()));
        }
    }
    outln!("env names:    {}", groups.join("; "));
    let staged: Vec<String> = p
        .staged_files
        .iter()
        .map(|f| format!("{} ({})", word(&f.name), bytes(f.bytes)))
        .collect();
    outln!("staged files: {}", staged.join(", "));
    outln!(
        "attempts:     at most {}; SIGTERM at the timeout, SIGKILL {} ms later",
        p.max_attempts,
        p.kill_grace_ms
    );
}

fn print_pages(pages: &runx_runtime::PagePlan) {
    outln!(
        "pages:        {} of at most {} each, at most {} of records a call",
        pages.count,
        bytes(pages.page_bytes as u64),
        bytes(pages.payload_bytes as u64)
    );
    let n = pages.pages.len();
    let (head, tail) = if n > PAGES_LISTED {
        (PAGES_LISTED / 2, PAGES_LISTED / 4)
    } else {
        (n, 0)
    };
    for (i, page) in pages.pages.iter().enumerate() {
        if i == head && tail > 0 {
            outln!("  … {} more pages", n - head - tail);
        }
        if i >= head && i < n - tail {
            continue;
        }
        outln!(
            "  page {}: bytes {}..{} ({} record{}{})",
            page.index,
            page.offset,
            page.next_offset,
            page.records,
            if page.records == 1 { "" } else { "s" },
            if page.eof { ", last" } else { "" }
        );
    }
    if let Some(stop) = &pages.stop {
        outln!(
            "stops:        a run that gets this far fails ({}/{}): {}",
            stop.error.kind,
            stop.error.code,
            escaped(&stop.error.message)
        );
    }
}

/// `json` cut to [`INPUTS_SHOWN`] bytes at a character boundary, saying how long it was.
fn clipped(json: String) -> String {
    if json.len() <= INPUTS_SHOWN {
        return json;
    }
    let mut end = INPUTS_SHOWN;
    while !json.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} bytes in all; --json shows them whole)",
        &json[..end],
        json.len()
    )
}

/// `n` bytes, in words.
fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".to_string()
    } else {
        format!("{n} bytes")
    }
}

/// The declared environment names, each with whether it is set.
fn declared(p: &Plan) -> String {
    let env = &p.environment;
    let names: Vec<String> = env
        .required
        .iter()
        .map(|n| (n, "required"))
        .chain(env.optional.iter().map(|n| (n, "optional")))
        .map(|(n, kind)| {
            let set = if env.set.contains(n) {
                "set"
            } else {
                "not set"
            };
            format!("{} ({kind}, {set})", word(n))
        })
        .collect();
    if names.is_empty() {
        "none declared".to_string()
    } else {
        names.join(", ")
    }
}

/// `s` as one shell word: as it is when nothing in it is special, else single-quoted, or in
/// `$'...'` with its control characters escaped, so no text reaches the terminal as a control
/// sequence.
fn word(s: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:@%+".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return Cow::Borrowed(s);
    }
    if !s.chars().any(char::is_control) {
        return Cow::Owned(format!("'{}'", s.replace('\'', r"'\''")));
    }
    Cow::Owned(format!("$'{}'", escape(s, true)))
}

/// `s` with its control characters escaped (a message quoting a file may hold any).
fn escaped(s: &str) -> Cow<'_, str> {
    if s.chars().any(char::is_control) {
        Cow::Owned(escape(s, false))
    } else {
        Cow::Borrowed(s)
    }
}

/// Control characters as `\n`, `\t`, `\r` or `\xHH` (every control character is below
/// U+00A0); in a quoted word, `\` and `'` escaped too.
fn escape(s: &str, quoted: bool) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            '\r' => out.push_str(r"\r"),
            '\\' if quoted => out.push_str(r"\\"),
            '\'' if quoted => out.push_str(r"\'"),
            c if c.is_control() => out.push_str(&format!(r"\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::word;

    #[test]
    fn words_are_quoted_only_when_needed_and_never_carry_control_characters() {
        assert_eq!(word("/a/b.sh"), "/a/b.sh");
        assert_eq!(word("--stage={{env.STAGE}}"), "'--stage={{env.STAGE}}'");
        assert_eq!(word(""), "''");
        assert_eq!(word("a b; rm -rf $(x)"), "'a b; rm -rf $(x)'");
        assert_eq!(word("it's"), r"'it'\''s'");
        let hostile = word("x\n\u{1b}]0;t\u{7}'\u{9b}");
        assert_eq!(hostile, r"$'x\n\x1b]0;t\x07\'\x9b'");
        assert!(!hostile.chars().any(char::is_control));
        assert_eq!(super::escaped("a\u{1b}[2Jb"), r"a\x1b[2Jb");
    }

    #[test]
    fn long_inputs_are_clipped_at_a_character_boundary() {
        let short = "{\"a\":1}".to_string();
        assert_eq!(super::clipped(short.clone()), short);
        let long = format!("{{\"a\":\"{}\"}}", "é".repeat(5000));
        let shown = super::clipped(long.clone());
        assert!(shown.len() < super::INPUTS_SHOWN + 64, "{}", shown.len());
        assert!(shown.ends_with(&format!(
            "… ({} bytes in all; --json shows them whole)",
            long.len()
        )));
    }
}
