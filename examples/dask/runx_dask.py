"""runx steps on a Dask cluster: each worker process keeps one warm `runx serve`.

    python runx_dask.py DATA_DIR                      # a LocalCluster of 2 worker processes
    python runx_dask.py DATA_DIR --scheduler tcp://scheduler:8786

    python runx_dask.py DATA_DIR --collect RECEIPTS   # and gather every receipt here

The graph: one paged `tally` step per archive file in DATA_DIR (they run in parallel, on
whichever workers Dask picks), then one `merge` step over their outputs. Dask schedules; runx
runs each step sandboxed, with the environment the step is given and a receipt per step. Each
step's receipt document (a `runx.receipt.v1`, named by its content address `sha256:<hex>`)
comes back with its result, so the client can keep and verify every receipt wherever the steps
ran. Receipts made without a signing key carry runx's local-development signature: they verify
for integrity only (`--allow-local-development-signatures`), which `verify_receipts` asks for
when it has no key either.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional

from dask.base import tokenize
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
    resolve. `sign_key` is a key file on the worker's machine that the server signs receipts
    with (else the `RUNX_RECEIPT_SIGN_*` of the worker's environment, if set): a path, never
    the key, since the plugin travels through the scheduler.
    """

    name = PLUGIN

    def __init__(
        self,
        runx: str = "runx",
        pool_size: Optional[int] = None,
        cwd: Optional[str] = None,
        sign_key: Optional[str] = None,
    ) -> None:
        self.runx = runx
        self.pool_size = pool_size
        self.cwd = cwd
        self.sign_key = sign_key
        self.client: Optional[RunxClient] = None

    def setup(self, worker: Any) -> None:
        threads = int(getattr(worker, "nthreads", 1) or 1)
        self.client = RunxClient(
            self.runx, pool_size=self.pool_size or threads, cwd=self.cwd, sign_key=self.sign_key
        )

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
    failure's kind and code; it pickles) when the step does not complete (runx's `outcome` is
    not `completed`, even though a failed run's receipt is sealed), so Dask marks the task
    failed. The result is the step's `result` (its output), its `run_id` and `receipt_id`, and
    the receipt document (`receipt_body`) as well as its path on this worker
    (`receipt_path`)."""
    result = serve_client().run(
        skill, inputs, runner=runner, env=env, cwd=cwd, receipt_dir=receipt_dir, receipt_body=True
    )
    return {
        "result": result.result,
        "run_id": result.run_id,
        "receipt_id": result.receipt_id,
        "receipt_path": result.receipt_path,
        "receipt_body": result.receipt_body,
        "host": socket.gethostname(),
        "server_pid": serve_client().pid,
    }


def step_key(name: str, *parameters: Any) -> str:
    """A task key from everything the step depends on: the same step with the same
    parameters has the same key (Dask may reuse a result it still holds), and a step with any
    other parameter (inputs, `cwd`, `receipt_dir`) has another one, so it runs again."""
    return f"{name}-{tokenize(*parameters)}"


def merge_step(
    skill: str,
    parts: List[Dict[str, Any]],
    cwd: Optional[str] = None,
    receipt_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """A Dask task: the javascript reduce step over the outputs of the tally steps."""
    inputs = {"parts": [p["result"] for p in parts]}
    return runx_step(skill, inputs, cwd=cwd, receipt_dir=receipt_dir)


def tally_archives(
    dask: DaskClient,
    data_dir: str,
    archives: List[str],
    skills_dir: str = str(SKILLS),
    receipt_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """Runs the graph: a `tally` step per archive in `data_dir`, then `merge`. `skills_dir`
    and `data_dir` are paths on the workers. Returns the merged output (`result`), every step's
    receipt id, receipt path (`receipts`, on the machine that ran the step) and document
    (`receipt_bodies`, here), and which servers ran the tallies."""
    tally = os.path.join(skills_dir, "tally")
    merge = os.path.join(skills_dir, "merge")
    parts = []
    for name in archives:
        inputs = {"archive_file": name}
        parts.append(
            dask.submit(
                runx_step,
                tally,
                inputs,
                cwd=data_dir,
                receipt_dir=receipt_dir,
                key=step_key("tally", tally, inputs, data_dir, receipt_dir),
            )
        )
    total = dask.submit(
        merge_step,
        merge,
        parts,
        cwd=data_dir,
        receipt_dir=receipt_dir,
        key=step_key("merge", merge, [p.key for p in parts], data_dir, receipt_dir),
    )
    merged = total.result()
    tallies = dask.gather(parts)
    steps = tallies + [merged]
    return {
        "result": merged["result"],
        "receipt_ids": [s["receipt_id"] for s in steps],
        "receipts": [s["receipt_path"] for s in steps],
        "receipt_bodies": [s["receipt_body"] for s in steps],
        "ran_on": sorted({(t["host"], t["server_pid"]) for t in tallies}),
    }


#: What a receipt's `id` is: its content address.
RECEIPT_ID = re.compile(r"sha256:[0-9a-f]{64}")

#: Variables that give `runx receipt verify` a key (a verification key, or a signing key whose
#: public half it uses).
KEY_VARIABLES = ("RUNX_RECEIPT_VERIFY_KID", "RUNX_RECEIPT_SIGN_KID")


def receipt_file_name(receipt_id: str) -> str:
    """The file name runx gives the receipt `receipt_id`: `sha256-<hex>.json`. An id that is
    not a content address is refused, never used as a path."""
    if not RECEIPT_ID.fullmatch(receipt_id):
        raise ValueError(f"a receipt id that is not a sha256 content address: {receipt_id!r}")
    return receipt_id.replace(":", "-", 1) + ".json"


def collect_receipts(bodies: Iterable[Mapping[str, Any]], directory: Path) -> List[Path]:
    """Writes each receipt document as `sha256-<hex>.json` (its id, as runx names its receipt
    files) in `directory`, on this machine, and returns the paths. An id that is not a content
    address is refused, not used as a path. Ids are content addresses, so the same receipt
    collected twice (from any machine) is written once; a *different* document under an id
    already collected is not what its id says, and raises `FileExistsError` instead of
    replacing the one there (`verify_receipts` tells which is not)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for body in bodies:
        receipt_id = str(body.get("id", ""))
        path = directory / receipt_file_name(receipt_id)
        try:
            with open(path, "x", encoding="utf-8") as f:  # never over another receipt
                json.dump(body, f)
        except FileExistsError:
            if json.loads(path.read_text(encoding="utf-8")) != body:
                raise FileExistsError(
                    f"another document with the receipt id {receipt_id!r} is already in {directory}"
                ) from None
        paths.append(path)
    return paths


def has_key(public_key: Optional[str], env: Optional[Mapping[str, str]]) -> bool:
    """Whether `runx receipt verify` would have a key: `public_key`, else a verification or
    signing key in `env` (else in this process's environment)."""
    if public_key is not None:
        return True
    variables = os.environ if env is None else env
    return any(variables.get(name) for name in KEY_VARIABLES)


def verify_receipts(
    paths: Iterable[Path],
    runx: str = "runx",
    public_key: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    allow_local_development_signatures: Optional[bool] = None,
) -> Dict[str, Any]:
    """`runx receipt verify --json` on receipt files: digest, content address, schema, evidence
    and signature, offline. The verification key is the file `public_key`
    (`RUNX_RECEIPT_VERIFY_*` lines), else the `RUNX_RECEIPT_VERIFY_*` (or signing key) of `env`,
    else of this process's environment.

    Receipts made without a signing key carry a local-development signature, which proves no
    signer: they verify for integrity only, with `--allow-local-development-signatures`. That
    is passed when `allow_local_development_signatures` says so; by default (`None`), when there
    is no key to verify with (then nothing stronger can be checked). A receipt's own say is never
    asked: a changed receipt could claim to be unsigned.

    Returns runx's report, `{"status": "verified", ...}` when every receipt verifies, with
    `allow_local_development_signatures` added (whether signatures were checked for integrity
    only)."""
    allow = (
        not has_key(public_key, env)
        if allow_local_development_signatures is None
        else allow_local_development_signatures
    )
    command = [runx, "receipt", "verify", "--json"]
    if public_key is not None:
        command += ["--public-key", public_key]
    if allow:
        command.append("--allow-local-development-signatures")
    command += [str(p) for p in paths]
    done = subprocess.run(
        command, capture_output=True, env=None if env is None else dict(env), check=False
    )
    try:
        report: Dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        report = {"status": "usage", "error": done.stderr.decode(errors="replace").strip()}
    report["allow_local_development_signatures"] = allow
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path, help="a directory of archive-*.json files (make_archives.py)")
    parser.add_argument("--scheduler", help="a running scheduler, e.g. tcp://scheduler:8786")
    parser.add_argument("--runx", default=os.environ.get("RUNX_BIN", "runx"))
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    parser.add_argument("--collect", type=Path, help="write every step's receipt here, and verify them")
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    archives = sorted(p.name for p in data_dir.glob("archive-*.json"))
    if args.scheduler:
        with DaskClient(args.scheduler) as dask:
            run(dask, args.runx, data_dir, archives, args.collect)
    else:
        from distributed import LocalCluster

        with LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True
        ) as cluster, DaskClient(cluster) as dask:
            run(dask, args.runx, data_dir, archives, args.collect)


def run(
    dask: DaskClient, runx: str, data_dir: Path, archives: List[str], collect: Optional[Path]
) -> None:
    dask.register_plugin(RunxServe(runx=runx))
    result = tally_archives(dask, str(data_dir), archives)
    print(result["result"])
    for host, pid in result["ran_on"]:
        print(f"tallied on {host} by runx serve pid {pid}")
    for receipt_id, receipt in zip(result["receipt_ids"], result["receipts"]):
        print("receipt", receipt_id, receipt)
    if collect is not None:
        paths = collect_receipts(result["receipt_bodies"], collect)
        report = verify_receipts(paths, runx)
        how = " (integrity only: no signing key)" if report["allow_local_development_signatures"] else ""
        print(f"collected {len(paths)} receipts in {collect}: {report.get('status')}{how}")
        if report.get("status") != "verified":
            print(report.get("error") or [r for r in report.get("receipts", []) if r["status"] != "verified"])


if __name__ == "__main__":
    main()
