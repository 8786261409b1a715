"""Fixtures: the real `runx` binary and a package written at test time."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
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
