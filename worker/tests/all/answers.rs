//! One answer on both engines (issue 42): the results the specification gives, checked on each
//! engine against the value the specification (or runx's documented rule, where it leaves the
//! choice to the engine) gives, not only against the other engine. Each table row is an
//! expression and the JSON text of its value, or `throws Name`.

use super::call_source;
use runx_worker::{Engine, Limits};

/// Evaluates each expression in one call, in a module of its own, and returns its value as
/// JSON text or `throws Name`.
fn answers(engine: &mut dyn Engine, expressions: &[&str]) -> Vec<String> {
    let mut source = String::from("export default () => {\n  const out = [];\n");
    for e in expressions {
        source.push_str(&format!(
            "  try {{ out.push(JSON.stringify({e})); }} catch (err) {{ out.push('throws ' + err.name); }}\n"
        ));
    }
    source.push_str("  return { out };\n};\n");
    let out = match call_source(engine, &source, Limits::default()) {
        Ok(out) => out,
        Err((f, _)) => panic!("the call failed: {f}\n{source}"),
    };
    let value: serde_json::Value = serde_json::from_slice(&out.output).expect("JSON output");
    value["out"]
        .as_array()
        .expect("an array of answers")
        .iter()
        .map(|v| v.as_str().unwrap_or("undefined").to_string())
        .collect()
}

/// Checks every row of `table` on `engine`, naming each row that differs.
fn check(engine: &mut dyn Engine, table: &[(&str, &str)]) {
    let expressions: Vec<&str> = table.iter().map(|(e, _)| *e).collect();
    let got = answers(engine, &expressions);
    let wrong: Vec<String> = table
        .iter()
        .zip(&got)
        .filter(|((_, want), got)| want != got)
        .map(|((e, want), got)| format!("{e}\n    want {want}\n    got  {got}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} answers differ:\n{}",
        wrong.len(),
        table.len(),
        wrong.join("\n")
    );
}

/// A setter given NaN makes the date invalid (QuickJS kept the old time); `Date.UTC` and
/// `new Date(y, m, ...)` take runx's one MakeDay rule (V8's bounds: a year within ±1,000,000,
/// a month within ±10,000,000), convert every argument in order, and clip the time value.
pub fn date_arithmetic_follows_the_specification(e: &mut dyn Engine) {
    const LOG: &str =
        "const log = []; const v = (x) => ({ valueOf() { log.push(x); return x; } });";
    let rows: Vec<(String, &str)> = vec![
        ("(() => { const d = new Date(0); d.setMinutes(NaN); return d.getTime(); })()".into(), "null"),
        ("(() => { const d = new Date(5e12); return [d.setFullYear(2001, NaN), d.getTime()]; })()".into(), "[null,null]"),
        ("(() => { const d = new Date(NaN); return [d.setFullYear(2000), d.getTime()]; })()".into(), "[946684800000,946684800000]"),
        ("(() => { const d = new Date(NaN); return [d.setMonth(3), d.getTime()]; })()".into(), "[null,null]"),
        ("(() => { const d = new Date(1e12); return [d.setYear(95), d.setYear(NaN), d.getTime()]; })()".into(), "[810611200000,null,null]"),
        ("(() => { const d = new Date(1e12); return [d.setUTCHours(-5, 3e3), d.setMinutes(), d.getTime()]; })()".into(), "[1000155640000,null,null]"),
        ("(() => { const d = new Date(1e12); return [d.setSeconds(1, undefined), d.getTime()]; })()".into(), "[null,null]"),
        ("(() => { const d = new Date(1e12); return [d.setMonth(1e7), d.setTime(1e12), d.setDate(-1e8), d.setTime(1e12), d.setMilliseconds(-8.64e15)]; })()".into(), "[null,1000000000000,-8639000777600000,1000000000000,-8639000000000000]"),
        ("(() => { const d = new Date(1e12); return [d.setUTCMilliseconds(Infinity), d.getTime()]; })()".into(), "[null,null]"),
        // Every argument is converted, in order, even when the date is invalid.
        (format!("(() => {{ {LOG} const d = new Date(NaN); return [d.setHours(v(1), v(2), v(3), v(4)), log.join()]; }})()"), r#"[null,"1,2,3,4"]"#),
        (format!("(() => {{ {LOG} return [Date.UTC(v(2000), v(NaN), v(3)), log.join()]; }})()"), r#"[null,"2000,NaN,3"]"#),
        (format!("(() => {{ {LOG} return [new Date(v(2000), v(1), v(3), v(4), v(5), v(6), v(7), v(8)).getTime(), log.join()]; }})()"), r#"[949550706007,"2000,1,3,4,5,6,7"]"#),
        ("Date.UTC(275761, 0, -400)".into(), "8639974857600000"),
        ("Date.UTC()".into(), "null"),
        ("Date.UTC(2020)".into(), "1577836800000"),
        ("Date.UTC(99, 1, 29, 25, 61, 61, 1001)".into(), "920340122001"),
        ("new Date(2020, 13, -1, 1e5).getTime()".into(), "1971964800000"),
        ("Date.UTC(1e6 + 0.5)".into(), "null"),
        ("Date.UTC(-1e6, -1e7)".into(), "null"),
        ("Date.UTC(-271821, 3, 20)".into(), "-8640000000000000"),
        ("Date.UTC(-271821, 3, 19)".into(), "null"),
        ("Date.UTC(1970, 0, 1, 0, 0, 0, 8.64e15 + 0.5)".into(), "8640000000000000"),
        ("Date.UTC(0, 1e7)".into(), "null"),
        ("Date.UTC(1970, 0, 1, -1e20, 1e20)".into(), "null"),
        ("Date.UTC(2000, -1.5, 2.9, -0.5)".into(), "944092800000"),
        ("new Date(-1, 0).getTime()".into(), "-62198755200000"),
        ("new Date(99.9, 0).getTime()".into(), "915148800000"),
        ("new Date(-0.5, 0).getTime()".into(), "-2208988800000"),
        ("Date.UTC(100, 0)".into(), "-59011459200000"),
        ("new Date(275760, 8, 13, 0, 0, 0, 1).getTime()".into(), "null"),
        ("[Date.UTC.length, Date.UTC.name, Date.prototype.setUTCMinutes.length, Date.prototype.setUTCMinutes.name, Date.prototype.setYear.length]".into(), r#"[7,"UTC",3,"setUTCMinutes",1]"#),
        ("(() => { try { Date.prototype.setHours.call({}, 1); return 'no'; } catch (e) { return e.name; } })()".into(), r#""TypeError""#),
        ("(() => { try { return new Date.prototype.setHours(1); } catch (e) { return e.name; } })()".into(), r#""TypeError""#),
    ];
    let table: Vec<(&str, &str)> = rows.iter().map(|(e, w)| (e.as_str(), *w)).collect();
    check(e, &table);
}

/// `toLocaleLowerCase`/`toLocaleUpperCase`: SpecialCasing's Turkish, Azerbaijani and
/// Lithuanian mappings; every other locale as `toLowerCase`/`toUpperCase`; tags read as
/// ECMA-402 reads them. The expected texts are ICU's (Node.js), but for Greek.
pub fn locale_case_mapping_is_one_rule(e: &mut dyn Engine) {
    check(
        e,
        &[
            ("'I'.toLocaleLowerCase('tr')", r#""ı""#),
            ("'i'.toLocaleUpperCase('tr')", r#""İ""#),
            ("'İ'.toLocaleLowerCase('az')", r#""i""#),
            ("'I\\u0307'.toLocaleLowerCase('tr')", r#""i""#),
            ("'I\\u0316\\u0307'.toLocaleLowerCase('tr')", "\"i\u{0316}\""),
            ("'I\\u0301\\u0307'.toLocaleLowerCase('tr')", r#""ı́̇""#),
            (
                "'Iı DİYARBAKIR'.toLocaleLowerCase('tr-TR')",
                r#""ıı diyarbakır""#,
            ),
            (
                "'istanbul'.toLocaleUpperCase(['az-Latn-AZ', 'en'])",
                r#""İSTANBUL""#,
            ),
            ("'I\\u0301'.toLocaleLowerCase('lt')", r#""i̇́""#),
            ("'J\\u0300x'.toLocaleLowerCase('lt')", r#""j̇̀x""#),
            ("'I\\u0316'.toLocaleLowerCase('lt')", r#""i̖""#),
            ("'ÌÍĨĮ\\u0301'.toLocaleLowerCase('lt')", r#""i̇̀i̇́i̇̃į̇́""#),
            (
                "'i\\u0307 j\\u0323\\u0307 a\\u0307'.toLocaleUpperCase('lt')",
                "\"I J\u{0323} A\u{0307}\"",
            ),
            ("'I'.toLocaleLowerCase('en')", r#""i""#),
            ("'i'.toLocaleUpperCase()", r#""I""#),
            ("'I'.toLocaleLowerCase([])", r#""i""#),
            ("'ΌΣΟΣ Σ'.toLocaleLowerCase('tr')", r#""όσος σ""#),
            ("'όσος'.toLocaleUpperCase('el')", r#""ΌΣΟΣ""#),
            ("'Straße'.toLocaleUpperCase('tr')", r#""STRASSE""#),
            ("'I'.toLocaleLowerCase('TR')", r#""ı""#),
            ("'a'.toLocaleUpperCase('tr_TR')", "throws RangeError"),
            ("'a'.toLocaleUpperCase('')", "throws RangeError"),
            ("'a'.toLocaleUpperCase([1])", "throws TypeError"),
            ("'a'.toLocaleUpperCase(null)", "throws TypeError"),
            (
                "String.prototype.toLocaleUpperCase.call(null)",
                "throws TypeError",
            ),
            (
                "String.prototype.toLocaleLowerCase.call(12, 'tr')",
                r#""12""#,
            ),
            (
                "[String.prototype.toLocaleUpperCase.length, String.prototype.toLocaleLowerCase.name]",
                r#"[0,"toLocaleLowerCase"]"#,
            ),
        ],
    );
}

/// A frozen array that holds an element cannot be sorted (every element is written back with
/// a Set that throws), whatever its order or length; the comparator runs first as for any
/// array. An empty frozen array, and one of holes only, sort to themselves.
pub fn sorting_a_frozen_array_throws(e: &mut dyn Engine) {
    check(
        e,
        &[
            ("Object.freeze([1, 2, 3]).sort()", "throws TypeError"),
            ("Object.freeze([2, 1]).sort()", "throws TypeError"),
            ("Object.freeze([1]).sort()", "throws TypeError"),
            (
                "Object.freeze([1, 2]).sort((a, b) => a - b)",
                "throws TypeError",
            ),
            ("Object.freeze([]).sort()", "[]"),
            ("Object.freeze([, ,]).sort()", "[null,null]"),
            ("Object.seal([2, 1]).sort()", "[1,2]"),
            ("[3, 1, 2].sort()", "[1,2,3]"),
            (
                "Object.freeze([1, 2, 3]).toSorted((a, b) => b - a)",
                "[3,2,1]",
            ),
            (
                "(() => { let n = 0; try { Object.freeze([2, 1]).sort((a, b) => { n++; return a - b; }); } catch (e) { return [e.name, n > 0]; } })()",
                r#"["TypeError",true]"#,
            ),
            ("Object.freeze([1]).sort(1)", "throws TypeError"),
            ("[1, 2].sort(null)", "throws TypeError"),
            ("Array.prototype.sort.length", "1"),
        ],
    );
}

per_engine!(
    date_arithmetic_follows_the_specification,
    locale_case_mapping_is_one_rule,
    sorting_a_frozen_array_throws,
);
