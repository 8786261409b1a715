//! The differential test: generated programs run on QuickJS and on V8, and every result must be
//! the same text on both, outside the documented list of differences (`docs/src/engines.md`).
//!
//! Each program evaluates expressions drawn from templates with generated arguments: the
//! `Math` functions and `**` over numbers of every magnitude, number formatting in every
//! radix and precision, date parsing and printing, sorting, string and regular expression
//! methods, JSON both ways, and a walk of every intrinsic reachable from `globalThis`. The
//! seed is fixed, so a failure names a program that can be run again; `RUNX_DIFF_PROGRAMS`
//! sets how many (300 by default) and `RUNX_DIFF_SEED` another seed.

use super::call_source;
use runx_worker::{Engine, Limits, QuickJs, V8};
use std::fmt::Write;

/// A small deterministic generator (64-bit LCG, top bits): no randomness crate needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    /// A number of any magnitude and sign, sometimes a special one, as JavaScript source.
    fn number(&mut self) -> String {
        match self.below(10) {
            0 => self
                .pick(&[
                    "0",
                    "-0",
                    "1",
                    "-1",
                    "0.5",
                    "2",
                    "NaN",
                    "Infinity",
                    "-Infinity",
                    "Math.PI",
                    "Math.E",
                    "5e-324",
                    "1.7976931348623157e308",
                    "9007199254740993",
                ])
                .to_string(),
            1 => format!("{}", self.below(2_000_000) as i64 - 1_000_000),
            2 => js_number(f64::from_bits(self.next() << 11 | self.below(2048))),
            _ => {
                let mantissa = (self.below(1 << 52) as f64) / (1u64 << 52) as f64 + 1.0;
                let exponent = self.below(80) as i32 - 40;
                let sign = if self.below(2) == 0 { 1.0 } else { -1.0 };
                js_number(sign * mantissa * 2f64.powi(exponent))
            }
        }
    }

    /// A date field as a setter or `Date.UTC` takes it: small, large, fractional, negative, or
    /// not finite.
    fn field(&mut self) -> String {
        match self.below(8) {
            0 => self
                .pick(&[
                    "NaN",
                    "Infinity",
                    "-Infinity",
                    "undefined",
                    "'7'",
                    "-0",
                    "0.5",
                    "99",
                ])
                .to_string(),
            1 => format!("{}", self.below(2_000_000) as i64 - 1_000_000),
            2 => format!("{}", self.below(20_000_001) as i64 - 10_000_000),
            3 => format!("{}.5", self.below(200) as i64 - 100),
            4 => format!("{}e{}", self.below(19) as i64 - 9, self.below(21)),
            _ => format!("{}", self.below(400) as i64 - 100),
        }
    }

    fn date_text(&mut self) -> String {
        let year = 1900 + self.below(250);
        let (m, d) = (1 + self.below(13), 1 + self.below(32));
        let (h, mi, s) = (self.below(26), self.below(61), self.below(61));
        let forms = [
            format!("{year}-{m:02}-{d:02}"),
            format!("{year}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
            format!(
                "{year}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{}Z",
                self.below(1_000_000)
            ),
            format!("{year}-{m:02}-{d:02}T{h:02}:{mi:02}+0{}:30", self.below(10)),
            format!("{year}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}z"),
            format!("{year}-{m:02}"),
            format!("{year}/{m}/{d}"),
            format!("Jan {d} {year}"),
            format!("+{year:06}-{m:02}-{d:02}T00:00:00.000Z"),
            format!("{year}-{m}-{d}"),
        ];
        forms[self.below(forms.len() as u64) as usize].clone()
    }
}

/// A finite double as a JavaScript literal that reads back as the same double.
fn js_number(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else {
        format!("{x:e}")
    }
}

/// One generated expression, as source.
fn expression(rng: &mut Rng) -> String {
    const UNARY: &[&str] = &[
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh", "exp", "expm1",
        "log", "log1p", "log10", "log2", "sin", "sinh", "tan", "tanh", "sqrt", "fround", "round",
        "trunc", "sign", "clz32", "f16round",
    ];
    let (a, b) = (rng.number(), rng.number());
    match rng.below(20) {
        0..=3 => format!("Math.{}({a})", rng.pick(UNARY)),
        4 => format!(
            "Math.{}({a}, {b})",
            rng.pick(&["atan2", "pow", "hypot", "max", "min", "imul"])
        ),
        5 => format!("({a}) ** ({b})"),
        6 => format!("Math.hypot({a}, {b}, {})", rng.number()),
        7 => format!("({a}).toString({})", 2 + rng.below(35)),
        8 => format!(
            "[({a}).toFixed({}), ({a}).toPrecision({}), ({a}).toExponential({}), String({a}), ({a}).toLocaleString()]",
            rng.below(21),
            1 + rng.below(21),
            rng.below(21)
        ),
        9 => {
            let text = rng.date_text();
            format!("[Date.parse({text:?}), new Date({text:?}).getTime()]")
        }
        10 => {
            let t = (rng.below(1 << 46) as i64 - (1 << 45)) as f64;
            format!(
                "(() => {{ const d = new Date({t}); return [d.toString(), d.toUTCString(), d.toISOString(), d.toDateString(), d.toTimeString(), Date.parse(d.toString()), Date.parse(d.toUTCString()), d.toLocaleString()]; }})()"
            )
        }
        // A comparator that is not consistent (`x - y` with a NaN) leaves the order to the
        // engine: the numbers sorted that way are never NaN.
        11 => format!(
            "[{a}, {b}, {}, {}, 10, 9, 1, 'b', 'a', 'B', 'ä', 'é'].sort().concat([3, 1, 2, {a}, {b}].map((x) => x === x ? x : 0).sort((x, y) => x - y), ['b', 'a', 'B', 'ä', 'é', 'e\\u0301', 'z'].sort((x, y) => x.localeCompare(y)))",
            rng.number(),
            rng.number()
        ),
        12 => format!(
            "(() => {{ const s = 'Straße ǅ ﬀ İı ' + String({a}) + ' é e\\u0301 ☃ 𝒳'; return [s.toUpperCase(), s.toLowerCase(), s.normalize('NFD').length, s.normalize('NFKC'), s.padStart({}, '-'), s.split(/\\s+/u).length, s.replace(/[aeiou]/g, (m) => m.toUpperCase()), [...s.matchAll(/\\p{{L}}+/gu)].map((m) => m.index), s.at(-1), s.codePointAt(3), encodeURIComponent(s), s.localeCompare('z')]; }})()",
            rng.below(60)
        ),
        13 => format!(
            "JSON.stringify({{ a: [{a}, {b}, -0, 1e21, 1e-7], s: 'x\\u2028\\ud834\\udf06', n: null, u: undefined, d: new Date(0), nested: {{ k: [[], {{}}] }} }}, null, {})",
            rng.below(5)
        ),
        14 => format!(
            "[parseFloat('{a}'), Number('  {a}  '), parseInt('{}', {}), Number('0x1F'), Number('1_0'), JSON.parse('[{a}, 1e400, -0]')]",
            rng.below(1_000_000_000),
            2 + rng.below(35)
        ),
        16 => {
            let setter = rng.pick(&[
                "setMilliseconds",
                "setUTCSeconds",
                "setMinutes",
                "setUTCHours",
                "setDate",
                "setUTCMonth",
                "setFullYear",
                "setUTCFullYear",
                "setYear",
            ]);
            let t = if rng.below(5) == 0 {
                "NaN".to_string()
            } else {
                format!("{}", rng.below(1 << 46) as i64 - (1 << 45))
            };
            let args: Vec<String> = (0..rng.below(5)).map(|_| rng.field()).collect();
            format!(
                "(() => {{ const d = new Date({t}); const r = d.{setter}({}); return [r, d.getTime(), d.toString()]; }})()",
                args.join(", ")
            )
        }
        17 => {
            let fields: Vec<String> = (0..rng.below(8)).map(|_| rng.field()).collect();
            format!(
                "[Date.UTC({f}), new Date({f}).getTime()]",
                f = fields.join(", ")
            )
        }
        18 => {
            const PIECES: &[&str] = &[
                "I", "i", "J", "j", "\\u0130", "\\u0131", "\\u00cc", "\\u00cd", "\\u0128",
                "\\u012e", "\\u012f", "\\u0307", "\\u0300", "\\u0316", "\\u0301", "\\u0345",
                "\\u0323", " ", "\\u03a3", "a", "\\u00df", "\\u1e2d", "\\u0268",
            ];
            let text: String = (0..1 + rng.below(8)).map(|_| rng.pick(PIECES)).collect();
            let locale = rng.pick(&[
                "",
                "'tr'",
                "'az'",
                "'lt'",
                "'en'",
                "'TR-tr'",
                "'lt-LT-u-co-phonebk'",
                "['x', 'tr']",
                "['lt', 'tr']",
                "[]",
                "'tr_TR'",
            ]);
            format!(
                "['{text}'.toLocaleLowerCase({locale}), '{text}'.toLocaleUpperCase({locale}), '{text}'.toLowerCase(), '{text}'.toUpperCase()]"
            )
        }
        19 => {
            let array = rng.pick(&["[3, 1, 2]", "[1, 2, 3]", "[1]", "[]", "[, 1]", "[, ,]"]);
            let wrap = rng.pick(&[
                "Object.freeze",
                "Object.seal",
                "Object.preventExtensions",
                "",
            ]);
            let compare = rng.pick(&["", "(x, y) => x - y", "undefined"]);
            format!("{wrap}({array}).sort({compare})")
        }
        _ => format!(
            "(() => {{ const r = /(\\d+)-(?<w>\\w+)/g; const m = r.exec('a 12-ab 7-c'); return [m.index, m[1], m.groups.w, r.lastIndex, 'aXbXc'.split('X', {}), 'abc'.search(/c/), /a.c/s.test('a\\nc'), /\\bé/u.test('é')]; }})()",
            rng.below(4)
        ),
    }
}

/// A generated module: its expressions, each evaluated alone, results as text (a thrown error
/// gives its name: messages are engine texts, documented as different). Numbers are compared
/// by their bits; their decimal text is compared where an expression makes it (`String(x)`,
/// `toFixed`, …). A NaN is compared as NaN: the bits an engine writes for it into a buffer are
/// documented as different.
fn program(rng: &mut Rng) -> String {
    let mut source = String::from(
        "const bits = new DataView(new ArrayBuffer(8));\nconst hex = (x) => { if (x !== x) return 'NaN'; bits.setFloat64(0, x); return 'f64:' + bits.getUint32(0).toString(16) + ':' + bits.getUint32(4).toString(16); };\nconst show = (v) => typeof v === 'number' ? hex(v) : JSON.stringify(v, (k, x) => typeof x === 'number' ? hex(x) : typeof x === 'bigint' ? x + 'n' : x);\nexport default () => {\n  const out = [];\n",
    );
    for _ in 0..12 {
        let e = expression(rng);
        let _ = writeln!(
            source,
            "  try {{ out.push({e:?} + ' => ' + show({e})); }} catch (err) {{ out.push({e:?} + ' throws ' + err.name); }}"
        );
    }
    source.push_str("  return { out };\n};\n");
    source
}

fn run(engine: &mut dyn Engine, source: &str) -> String {
    match call_source(engine, source, Limits::default()) {
        Ok(out) => String::from_utf8_lossy(&out.output).into_owned(),
        Err((f, _)) => format!("failed: {f}"),
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn generated_programs_give_the_same_text_on_both_engines() {
    let count = env_number("RUNX_DIFF_PROGRAMS", 300);
    let seed = env_number("RUNX_DIFF_SEED", 0x5eed_2026);
    let mut rng = Rng(seed);
    let (mut quickjs, mut v8) = (QuickJs::new(), V8::new());
    let mut differences = Vec::new();
    for n in 0..count {
        let source = program(&mut rng);
        let (q, v) = (run(&mut quickjs, &source), run(&mut v8, &source));
        assert!(
            !q.starts_with("failed"),
            "program {n} failed on QuickJS: {q}\n{source}"
        );
        if q != v {
            let q: serde_json::Value = serde_json::from_str(&q).unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(&v).unwrap_or_default();
            let lines = |x: &serde_json::Value| -> Vec<String> {
                x["out"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|l| l.as_str().unwrap_or("").to_string())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            for (a, b) in lines(&q).iter().zip(lines(&v).iter()) {
                if a != b {
                    differences.push(format!("program {n}:\n  quickjs: {a}\n  v8:      {b}"));
                }
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} results differ (seed {seed:#x}):\n{}",
        differences.len(),
        differences
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Every intrinsic reachable from `globalThis`, with its properties' names and shapes, is the
/// same on both engines but for the documented shapes.
#[test]
fn the_intrinsics_are_the_same_on_both_engines() {
    const WALK: &str = r#"
export default () => {
  const seen = new Map([[globalThis, "g"]]);
  const paths = [];
  const queue = [[globalThis, "g"]];
  const keyName = (k) => typeof k === "symbol" ? `[${k.description}]` : k;
  while (queue.length) {
    const [o, path] = queue.shift();
    const keys = Reflect.ownKeys(o).map((k) => [keyName(k), k]).sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
    const kids = [];
    for (const [name, k] of keys) {
      const p = `${path}.${name}`;
      const d = Object.getOwnPropertyDescriptor(o, k);
      const kind = "value" in d ? (d.value === null ? "null" : typeof d.value) : `accessor${d.get ? "g" : ""}${d.set ? "s" : ""}`;
      paths.push(`${p} ${kind}${d.writable ? "w" : ""}${d.enumerable ? "e" : ""}${d.configurable ? "c" : ""}`);
      if ("value" in d && (typeof d.value === "object" || typeof d.value === "function") && d.value !== null) kids.push([d.value, p]);
      if (d.get) kids.push([d.get, p + "<get>"]);
      if (d.set) kids.push([d.set, p + "<set>"]);
    }
    const proto = Object.getPrototypeOf(o);
    if (proto && path !== "g") kids.push([proto, path + ".__proto__"]);
    for (const [v, p] of kids) {
      if (seen.has(v)) { paths.push(`${p} = ${seen.get(v)}`); continue; }
      seen.set(v, p); queue.push([v, p]);
    }
  }
  return { paths: paths.sort() };
};
"#;
    // The documented differences (docs/src/engines.md): the shape of %ThrowTypeError% (the
    // `caller`/`arguments` accessors), of `Error.stackTraceLimit` and the stack property, and
    // whether `String.prototype.length` is configurable.
    let documented = |p: &str| {
        p.starts_with("g.Array.__proto__.arguments<")
            || p.starts_with("g.Array.__proto__.caller<")
            || p.starts_with("g.Error.stackTraceLimit")
            || p.starts_with("g.Error.prototype.stack")
            || p.starts_with("g.String.prototype.length ")
    };
    let paths = |engine: &mut dyn Engine| -> Vec<String> {
        let out: serde_json::Value = serde_json::from_str(&run(engine, WALK)).unwrap_or_default();
        out["paths"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| p.as_str())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let (q, v) = (paths(&mut QuickJs::new()), paths(&mut V8::new()));
    assert!(q.len() > 1000, "the walk found {} paths", q.len());
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter()
            .filter(|p| !b.contains(p) && !documented(p))
            .cloned()
            .collect()
    };
    let (q_only, v_only) = (only(&q, &v), only(&v, &q));
    assert!(
        q_only.is_empty() && v_only.is_empty(),
        "QuickJS only: {q_only:#?}\nV8 only: {v_only:#?}"
    );
}
