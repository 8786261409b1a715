use runx_worker::bundle::ModuleBundle;
use runx_worker::engine::EngineCall;
use runx_worker::limits::Limits;
use std::collections::BTreeMap;
use std::sync::Arc;
fn main() {
    let src = std::env::args().nth(2).unwrap();
    for name in ["quickjs", "v8"] {
        let b = Arc::new(ModuleBundle::from_sources(
            "main.mjs",
            [("main.mjs", src.as_str())],
        ));
        let env = BTreeMap::new();
        let mut e = runx_worker::serve::engine_by_name(name).unwrap();
        let r = e.call(&EngineCall {
            bundle: &b,
            export: None,
            input: b"{}",
            page: None,
            environment: &env,
            limits: Limits::default(),
        });
        match r {
            Ok(o) => println!("{name}: {}", String::from_utf8_lossy(&o.output)),
            Err((f, _)) => println!("{name}: ERR {f}"),
        }
    }
}
