"""Per-step overhead of `runx serve` (warm, through the Python client) against spawning
`runx skill` per step, and the throughput of concurrent trivial steps with pools of 1 and 2.

    python3 benches/serve_bench.py --runx target/release/runx [--steps 1000] [--json]

Also run at the end of `cargo bench -p runx-benches`. Standard library and the repository's
client only; the step is a javascript runner that returns its input.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python"))

from runx_client import Client  # noqa: E402

YAML = """skill: trivial
version: "1"
runners:
  echo:
    type: javascript
    module: m.mjs
    inputs: { n: { type: integer } }
"""
MODULE = "export default (i) => ({ n: i.n });\n"
# Where receipts are written (`--receipts`); relative to the workspace.
RECEIPTS = "receipts"


def percentile(samples: List[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[round((len(ordered) - 1) * q)]


def summary(samples: List[float]) -> Dict[str, float]:
    return {
        "p50_ms": percentile(samples, 0.5) * 1000,
        "p99_ms": percentile(samples, 0.99) * 1000,
        "n": len(samples),
    }


def serve_steps(runx: str, ws: Path, steps: int) -> Dict[str, float]:
    with Client(runx, cwd=ws, pool_size=1) as client:
        for n in range(50):
            client.run("pkg", {"n": n}, receipt_dir=RECEIPTS)
        samples = []
        for n in range(steps):
            started = time.perf_counter()
            client.run("pkg", {"n": n}, receipt_dir=RECEIPTS)
            samples.append(time.perf_counter() - started)
    return summary(samples)


def uncached_steps(runx: str, ws: Path, steps: int) -> Dict[str, float]:
    """Warm steps whose module changes before each step (a comment): its profile is kept, its
    module closure is collected again on every step."""
    module = ws / "pkg" / "m.mjs"
    with Client(runx, cwd=ws, pool_size=1) as client:
        for n in range(50):
            client.run("pkg", {"n": n}, receipt_dir=RECEIPTS)
        samples = []
        for n in range(steps):
            module.write_text(f"{MODULE}// step {n}\n")
            started = time.perf_counter()
            client.run("pkg", {"n": n}, receipt_dir=RECEIPTS)
            samples.append(time.perf_counter() - started)
    return summary(samples)


def spawned_steps(runx: str, ws: Path, steps: int) -> Dict[str, float]:
    samples = []
    for n in range(steps + 5):
        started = time.perf_counter()
        done = subprocess.run(
            [runx, "skill", "pkg", "-i", f"n={n}", "--json", "--receipt-dir", RECEIPTS],
            cwd=ws,
            capture_output=True,
            env={},
        )
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(done.stderr.decode())
        # A `runx.skill_run.v1` result: a step succeeded when its outcome is `completed` (its
        # status is `sealed` whenever a receipt was written, a failed step's too).
        printed = json.loads(done.stdout)
        if printed.get("outcome") != "completed" or printed.get("result") != {"n": n}:
            raise RuntimeError(f"`runx skill` did not complete the step: {printed}")
        if n >= 5:
            samples.append(took)
    return summary(samples)


def throughput(runx: str, ws: Path, pool_size: int, concurrent: int, rounds: int) -> Dict[str, float]:
    with Client(runx, cwd=ws, pool_size=pool_size, queue=concurrent) as client:
        for n in range(20 * pool_size):
            client.run("pkg", {"n": n}, receipt_dir=RECEIPTS)
        walls = []
        for _ in range(rounds):
            started = time.perf_counter()
            steps = [client.submit("pkg", {"n": n}, receipt_dir=RECEIPTS) for n in range(concurrent)]
            for s in steps:
                s.result()
            walls.append(time.perf_counter() - started)
    wall = percentile(walls, 0.5)
    return {"pool_size": pool_size, "steps": concurrent, "wall_ms": wall * 1000, "steps_per_s": concurrent / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runx", default=os.environ.get("RUNX_BIN", "target/release/runx"))
    parser.add_argument("--steps", type=int, default=1000, help="warm steps timed through serve")
    parser.add_argument("--spawns", type=int, default=200, help="`runx skill` processes timed")
    parser.add_argument("--concurrent", type=int, default=256, help="steps in flight at once")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--receipts",
        default="receipts",
        help="receipt directory (default: in the bench's workspace); a tmpfs directory such as "
        "/dev/shm/x shows a step without the cost of making its receipt durable (two fsyncs)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    global RECEIPTS
    RECEIPTS = args.receipts
    runx = str(Path(args.runx).resolve())
    with tempfile.TemporaryDirectory(prefix="runx-serve-bench-") as tmp:
        ws = Path(tmp)
        (ws / "pkg").mkdir()
        (ws / "pkg" / "X.yaml").write_text(YAML)
        (ws / "pkg" / "m.mjs").write_text(MODULE)
        report = {
            "serve_warm_step": serve_steps(runx, ws, args.steps),
            "serve_step_uncached": uncached_steps(runx, ws, args.steps),
            "spawn_runx_skill_step": spawned_steps(runx, ws, args.spawns),
            "throughput": [throughput(runx, ws, n, args.concurrent, args.rounds) for n in (1, 2)],
            "cpus": os.cpu_count(),
        }
    if args.json:
        print(json.dumps(report))
        return
    warm, spawn = report["serve_warm_step"], report["spawn_runx_skill_step"]
    print("runx serve (issue 15): one trivial javascript step, receipt written each time")
    print(
        f"  warm through the Python client ({warm['n']} steps): p50 {warm['p50_ms']:.3f} ms  p99 {warm['p99_ms']:.3f} ms"
    )
    print(
        f"  `runx skill --json` spawned per step ({spawn['n']} steps): p50 {spawn['p50_ms']:.3f} ms  p99 {spawn['p99_ms']:.3f} ms"
    )
    cold = report["serve_step_uncached"]
    print(
        f"  the same, its module changed before each step (collected again): p50 {cold['p50_ms']:.3f} ms  p99 {cold['p99_ms']:.3f} ms"
    )
    print(f"  spawn / warm at p50: {spawn['p50_ms'] / warm['p50_ms']:.1f}x (goal: warm p50 <= 1.0 ms, p99 <= 3 ms, >= 12x)")
    for t in report["throughput"]:
        print(
            f"  {t['steps']} concurrent trivial steps, pool of {t['pool_size']}: {t['wall_ms']:.1f} ms, {t['steps_per_s']:.0f} steps/s (median of {args.rounds})"
        )


if __name__ == "__main__":
    main()
