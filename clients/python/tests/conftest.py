"""Fixtures: the real `runx` binary and a package written at test time."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
try:
    import runx_client  # noqa: F401 - installed (pip install ./clients/python), as CI tests it
except ImportError:  # the source tree, for a quick run without installing
    sys.path.insert(0, str(ROOT / "clients" / "python"))


@pytest.fixture(scope="session")
def runx_bin() -> str:
    path = os.environ.get("RUNX_BIN") or str(ROOT / "target" / "release" / "runx")
    if not Path(path).is_file():
        pytest.fail(f"no runx binary at {path}; build it: cargo build --release -p runx-cli")
    # Servers start in other directories: a relative path would not name the same file there.
    return str(Path(path).resolve())


STEPS_YAML = """skill: steps
version: "1.0.0"
runners:
  echo:
    default: true
    type: javascript
    module: steps.mjs
    export: echo
    environment: { optional: [REGION] }
    inputs: { name: string, x: any, n: any, after: boolean }
  needs-region:
    type: javascript
    module: steps.mjs
    export: echo
    environment: { required: [REGION] }
  spin:
    type: javascript
    module: steps.mjs
    export: spin
    timeout_seconds: 30
  count:
    type: javascript
    module: steps.mjs
    export: count
    inputs:
      file: { type: string, required: true }
      base: { type: string, default: workspace }
    pages: { path_from: file, path_scope_from: base, page_bytes: 64 }
  sleep:
    type: cli-tool
    command: /bin/sleep
    args: ["{{input.seconds}}"]
    inputs:
      seconds: { type: number, default: 30 }
"""

STEPS_MJS = """export function echo(inputs, { environment }) {
  console.log("echo");
  return { inputs, environment };
}
export function spin() { for (;;) {} }
export function count(inputs) {
  const p = inputs.runx_page;
  const n = (p.state ?? 0) + p.records.length;
  return p.eof ? { n } : { runx_page: { state: n } };
}
"""


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    pkg = tmp_path / "steps"
    pkg.mkdir()
    (pkg / "X.yaml").write_text(STEPS_YAML)
    (pkg / "steps.mjs").write_text(STEPS_MJS)
    (tmp_path / "items.json").write_text(json.dumps([{"i": i} for i in range(30)]))
    return tmp_path


#: A throwaway receipt signing key (the seed is public: tests only).
SIGN_KEY = {
    "RUNX_RECEIPT_SIGN_KID": "client-tests",
    "RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    "RUNX_RECEIPT_SIGN_ISSUER_TYPE": "ci",
}

FAKE_SERVE = '''#!{python}
"""A stand-in for `runx serve` that misbehaves on purpose, as FAKE_MODE says."""
import json, os, sys, time

mode = os.environ.get("FAKE_MODE", "")
refused = set()
SCHEMA = "runx.skill_run.v1"


def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()


def answer(rid, result):
    send({{"jsonrpc": "2.0", "id": rid, "result": result}})


for line in sys.stdin:
    request = json.loads(line)
    rid, method, params = request.get("id"), request.get("method"), request.get("params") or {{}}
    if method == "info":
        if mode == "no-info":
            send({{"jsonrpc": "2.0", "id": rid, "error": {{"code": -32601, "message": "method not found"}}}})
        else:
            # Claims room for far more than it takes, so the client must cope with busy.
            answer(rid, {{"pool_size": 1, "queue": 1000, "version": "fake"}})
        if mode == "close-stdout":
            sys.stdout.flush()
            os.close(1)
            time.sleep(60)
        continue
    if method == "shutdown":
        answer(rid, None)
        break
    if method == "cancel":
        answer(rid, {{"cancelled": False}})
        continue
    if mode == "busy-once" and rid not in refused:
        refused.add(rid)
        data = {{"running": 1, "queued": 0, "pool_size": 1, "queue_limit": 0}}
        send({{"jsonrpc": "2.0", "id": rid, "error": {{"code": -32001, "message": "busy", "data": data}}}})
        continue
    if mode == "garbage":
        sys.stdout.write("not json\\n[1, 2]\\n\\n")
        send({{"jsonrpc": "2.0", "id": 987654, "result": {{"status": "sealed"}}}})
        send({{"jsonrpc": "2.0", "method": "progress", "params": {{"id": 987654, "page_index": 0}}}})
        send({{"jsonrpc": "2.0", "method": "progress", "params": {{"id": rid, "page_index": "x"}}}})
        n = params.get("inputs", {{}}).get("n")
        if n == 3:  # an answer the client cannot read
            answer(rid, {{"schema": SCHEMA, "status": "sealed", "outcome": "completed",
                         "console": "not an object"}})
            continue
        if n == 5:  # a run result of another schema
            answer(rid, {{"schema": "runx.skill_run.v9", "status": "sealed", "outcome": "completed"}})
            continue
        if n == 6:  # a runx.skill_run.v1 without its outcome
            answer(rid, {{"schema": SCHEMA, "status": "sealed", "result": {{}}}})
            continue
    if mode == "legacy":  # the result of a runx older than runx.skill_run.v1
        answer(rid, {{"status": "sealed", "skill": "fake", "runner": "r", "output": params.get("inputs"),
                     "receipt": "/r/1.json", "error": None, "console": None, "stderr": None}})
        continue
    answer(rid, {{"schema": SCHEMA, "status": "sealed", "skill_name": "fake", "runner": "r",
                 "run_id": "run_r_0123456789abcdef", "receipt_id": "sha256:" + "0" * 64,
                 "closure": {{"disposition": "closed", "reason_code": "process_closed",
                             "summary": "fake r completed", "closed_at": "2026-01-01T00:00:00.000Z"}},
                 "result": params.get("inputs"), "outcome": "completed", "next": None,
                 "receipt_path": None, "console": None, "stderr": None}})
    if mode == "exit-after-one":
        sys.stderr.write("fake: the disk is on fire\\n")
        sys.exit(3)
'''


@pytest.fixture()
def fake_serve(tmp_path: Path) -> str:
    """An executable that speaks just enough of `runx serve`, badly (FAKE_MODE)."""
    path = tmp_path / "fake-runx"
    path.write_text(FAKE_SERVE.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)
