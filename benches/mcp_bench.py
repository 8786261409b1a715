"""One trivial javascript step three ways: a warm `tools/call` through `runx mcp serve`, a warm
`run` through `runx serve`, and a `runx skill` process per step. Both servers are driven the
same way (one JSON message per line over stdio, one request in flight), so the figures compare
the servers, not their clients.

    python3 benches/mcp_bench.py --runx target/release/runx [--steps 1000] [--json]

Standard library only. Each step writes its receipt (into --receipts; a tmpfs directory such
as /dev/shm/x leaves out the two fsyncs that make a receipt durable).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List

YAML = """skill: trivial
version: "1"
runners:
  echo:
    type: javascript
    module: m.mjs
    inputs: { n: { type: integer } }
"""
MODULE = "export default (i) => ({ n: i.n });\n"
WARMUP = 50


def percentile(samples: List[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[round((len(ordered) - 1) * q)]


def summary(samples: List[float]) -> Dict[str, float]:
    return {
        "p50_ms": percentile(samples, 0.5) * 1000,
        "p99_ms": percentile(samples, 0.99) * 1000,
        "mean_ms": sum(samples) / len(samples) * 1000,
        "n": len(samples),
    }


class Lines:
    """A server on stdio: one JSON message per line each way."""

    def __init__(self, argv: List[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )

    def ask(self, message: dict) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == message["id"]:
                return answer

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


def timed(server: Lines, make: "callable", steps: int, check: "callable") -> Dict[str, float]:
    for n in range(WARMUP):
        check(server.ask(make(n)))
    samples = []
    for n in range(WARMUP, WARMUP + steps):
        started = time.perf_counter()
        answer = server.ask(make(n))
        samples.append(time.perf_counter() - started)
        check(answer)
    return summary(samples)


def mcp_steps(runx: str, ws: Path, steps: int, receipts: str) -> Dict[str, float]:
    server = Lines([runx, "mcp", "serve", "pkg", "--pool-size", "1", "--receipt-dir", receipts], ws)
    server.ask({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    assert server.proc.stdin
    server.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def make(n: int) -> dict:
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": "trivial", "arguments": {"n": n}}}

    def check(answer: dict) -> None:
        if answer["result"]["isError"]:
            raise RuntimeError(answer)

    try:
        return timed(server, make, steps, check)
    finally:
        server.close()


def serve_steps(runx: str, ws: Path, steps: int, receipts: str) -> Dict[str, float]:
    server = Lines([runx, "serve", "--pool-size", "1"], ws)

    def make(n: int) -> dict:
        return {"jsonrpc": "2.0", "id": n, "method": "run",
                "params": {"skill": "pkg", "inputs": {"n": n}, "receipt_dir": receipts}}

    def check(answer: dict) -> None:
        if answer["result"]["status"] != "sealed":
            raise RuntimeError(answer)

    try:
        return timed(server, make, steps, check)
    finally:
        server.close()


def spawned_steps(runx: str, ws: Path, steps: int, receipts: str) -> Dict[str, float]:
    samples = []
    for n in range(steps + 5):
        started = time.perf_counter()
        done = subprocess.run(
            [runx, "skill", "pkg", "-i", f"n={n}", "--json", "--receipt-dir", receipts],
            cwd=ws, capture_output=True, env={},
        )
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(done.stderr.decode())
        if n >= 5:
            samples.append(took)
    return summary(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runx", default=os.environ.get("RUNX_BIN", "target/release/runx"))
    parser.add_argument("--steps", type=int, default=1000, help="warm steps timed per server")
    parser.add_argument("--spawns", type=int, default=200, help="`runx skill` processes timed")
    parser.add_argument("--receipts", default="receipts", help="receipt directory (relative: in the workspace)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runx = str(Path(args.runx).resolve())
    with tempfile.TemporaryDirectory(prefix="runx-mcp-bench-") as tmp:
        ws = Path(tmp)
        (ws / "pkg").mkdir()
        (ws / "pkg" / "X.yaml").write_text(YAML)
        (ws / "pkg" / "m.mjs").write_text(MODULE)
        report = {
            "mcp_tools_call": mcp_steps(runx, ws, args.steps, args.receipts),
            "serve_run": serve_steps(runx, ws, args.steps, args.receipts),
            "spawn_runx_skill": spawned_steps(runx, ws, args.spawns, args.receipts),
            "cpus": os.cpu_count(),
        }
    mcp, serve, spawn = report["mcp_tools_call"], report["serve_run"], report["spawn_runx_skill"]
    report["ratios"] = {
        "mcp_over_serve_p50": mcp["p50_ms"] / serve["p50_ms"],
        "spawn_over_mcp_p50": spawn["p50_ms"] / mcp["p50_ms"],
    }
    if args.json:
        print(json.dumps(report))
        return
    print("one trivial javascript step, receipt written each time, one request in flight")
    for name, r in (("runx mcp serve, tools/call", mcp), ("runx serve, run", serve), ("runx skill, a process a step", spawn)):
        print(f"  {name:32} p50 {r['p50_ms']:7.3f} ms  p99 {r['p99_ms']:7.3f} ms  ({r['n']} steps)")
    print(f"  mcp / serve at p50: {report['ratios']['mcp_over_serve_p50']:.2f}x   "
          f"spawn / mcp at p50: {report['ratios']['spawn_over_mcp_p50']:.1f}x")


if __name__ == "__main__":
    main()
