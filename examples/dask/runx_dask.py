"""runx steps on a Dask cluster: each worker process keeps one warm `runx serve`.

    python runx_dask.py DATA_DIR                      # a LocalCluster of 2 worker processes
    python runx_dask.py DATA_DIR --scheduler tcp://scheduler:8786

The graph: one paged `tally` step per archive file in DATA_DIR (they run in parallel, on
whichever workers Dask picks), then one `merge` step over their outputs. Dask schedules; runx
runs each step sandboxed, with the environment the step is given and a receipt per step.
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from distributed import Client as DaskClient
from distributed import WorkerPlugin, get_worker

from runx_client import Client as RunxClient

HERE = Path(__file__).resolve().parent
SKILLS = HERE / "skills"
PLUGIN = "runx-serve"


class RunxServe(WorkerPlugin):
    """Starts one `runx serve` when a worker process starts, stops it with the worker.

    `runx` is the executable on the worker's machine. Steps run at most `pool_size` at a time
    in that server (default: the worker's thread count, so every Dask thread has a slot);
    `cwd` is the server's working directory, against which relative skill and data paths
    resolve.
    """

    name = PLUGIN

    def __init__(
        self, runx: str = "runx", pool_size: Optional[int] = None, cwd: Optional[str] = None
    ) -> None:
        self.runx = runx
        self.pool_size = pool_size
        self.cwd = cwd
        self.client: Optional[RunxClient] = None

    def setup(self, worker: Any) -> None:
        threads = int(getattr(worker, "nthreads", 1) or 1)
        self.client = RunxClient(self.runx, pool_size=self.pool_size or threads, cwd=self.cwd)

    def teardown(self, worker: Any) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def serve_client() -> RunxClient:
    """The `runx serve` of the worker this task runs on."""
    # Duck-typed: when this file runs as a script, Dask ships its classes by value, so the
    # plugin's class object on the worker is not this module's.
    client = getattr(get_worker().plugins.get(PLUGIN), "client", None)
    if not isinstance(client, RunxClient):
        raise RuntimeError("the runx-serve plugin has not started on this worker")
    return client


def runx_step(
    skill: str,
    inputs: Mapping[str, Any],
    *,
    runner: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    receipt_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """A Dask task: one runx step on this worker's warm server. Raises `RunxError` (with the
    failure's kind and code) when the step fails, so Dask marks the task failed."""
    result = serve_client().run(
        skill, inputs, runner=runner, env=env, cwd=cwd, receipt_dir=receipt_dir
    )
    return {
        "output": result.output,
        "receipt": result.receipt,
        "host": socket.gethostname(),
        "server_pid": serve_client().pid,
    }


def merge_step(
    skill: str,
    parts: List[Dict[str, Any]],
    cwd: Optional[str] = None,
    receipt_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """A Dask task: the javascript reduce step over the outputs of the tally steps."""
    inputs = {"parts": [p["output"] for p in parts]}
    return runx_step(skill, inputs, cwd=cwd, receipt_dir=receipt_dir)


def tally_archives(
    dask: DaskClient,
    data_dir: str,
    archives: List[str],
    skills_dir: str = str(SKILLS),
    receipt_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """Runs the graph: a `tally` step per archive in `data_dir`, then `merge`. `skills_dir`
    and `data_dir` are paths on the workers. Returns the merged output, every step's receipt
    (each written on the machine that ran the step) and which servers ran the tallies."""
    parts = [
        dask.submit(
            runx_step,
            os.path.join(skills_dir, "tally"),
            {"archive_file": name},
            cwd=data_dir,
            receipt_dir=receipt_dir,
            key=f"tally-{name}",
            pure=False,
        )
        for name in archives
    ]
    total = dask.submit(
        merge_step,
        os.path.join(skills_dir, "merge"),
        parts,
        cwd=data_dir,
        receipt_dir=receipt_dir,
        key="merge",
        pure=False,
    )
    merged = total.result()
    tallies = dask.gather(parts)
    return {
        "output": merged["output"],
        "receipts": [t["receipt"] for t in tallies] + [merged["receipt"]],
        "ran_on": sorted({(t["host"], t["server_pid"]) for t in tallies}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path, help="a directory of archive-*.json files (make_archives.py)")
    parser.add_argument("--scheduler", help="a running scheduler, e.g. tcp://scheduler:8786")
    parser.add_argument("--runx", default=os.environ.get("RUNX_BIN", "runx"))
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    archives = sorted(p.name for p in data_dir.glob("archive-*.json"))
    if args.scheduler:
        with DaskClient(args.scheduler) as dask:
            run(dask, args.runx, data_dir, archives)
    else:
        from distributed import LocalCluster

        with LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True
        ) as cluster, DaskClient(cluster) as dask:
            run(dask, args.runx, data_dir, archives)


def run(dask: DaskClient, runx: str, data_dir: Path, archives: List[str]) -> None:
    dask.register_plugin(RunxServe(runx=runx))
    result = tally_archives(dask, str(data_dir), archives)
    print(result["output"])
    for host, pid in result["ran_on"]:
        print(f"tallied on {host} by runx serve pid {pid}")
    for receipt in result["receipts"]:
        print("receipt", receipt)


if __name__ == "__main__":
    main()
