"""The Dask example on a LocalCluster of 2 worker processes against the real runx binary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for path in (ROOT / "clients" / "python", HERE):
    sys.path.insert(0, str(path))
# Worker processes import the plugin and the client by name: give them the same path.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "clients" / "python"), str(HERE), os.environ.get("PYTHONPATH", "")]
)

from distributed import Client, LocalCluster  # noqa: E402

from make_archives import make_archives  # noqa: E402
from runx_dask import PLUGIN, SKILLS, RunxServe, tally_archives  # noqa: E402


@pytest.fixture(scope="module")
def runx_bin() -> str:
    path = os.environ.get("RUNX_BIN") or str(ROOT / "target" / "release" / "runx")
    if not Path(path).is_file():
        pytest.fail(f"no runx binary at {path}; build it: cargo build --release -p runx-cli")
    # Servers start in other directories: a relative path would not name the same file there.
    return str(Path(path).resolve())


def skill_json(runx_bin: str, skill: Path, inputs: dict, cwd: Path, receipts: Path) -> dict:
    done = subprocess.run(
        [runx_bin, "skill", str(skill), "--inputs", "-", "--json", "--receipt-dir", str(receipts)],
        input=json.dumps(inputs).encode(),
        capture_output=True,
        cwd=cwd,
        env={},
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["status"] == "sealed", result
    return result["output"]


def test_the_graph_on_two_worker_processes_equals_a_sequential_run(runx_bin: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    archives = make_archives(data, count=6, orders=1500)
    receipts = tmp_path / "receipts"
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as dask:
        dask.register_plugin(RunxServe(runx=runx_bin))
        servers = dask.run(lambda dask_worker: dask_worker.plugins[PLUGIN].client.pid)
        assert len(servers) == 2 and len(set(servers.values())) == 2, servers
        result = tally_archives(dask, str(data), archives, receipt_dir=str(receipts))
    # The workers stopped their servers when they closed.
    for pid in servers.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)

    sequential_parts = [
        skill_json(runx_bin, SKILLS / "tally", {"archive_file": a}, data, tmp_path / "seq")
        for a in archives
    ]
    sequential = skill_json(
        runx_bin, SKILLS / "merge", {"parts": sequential_parts}, tmp_path, tmp_path / "seq"
    )
    assert result["output"] == sequential
    assert result["output"]["archives"] == 6 and result["output"]["orders"] == 6 * 1500

    assert len(result["receipts"]) == len(archives) + 1
    for path in result["receipts"]:
        receipt = json.loads(Path(path).read_text())
        assert receipt["status"] == "sealed"
        assert Path(path).parent == receipts
    kinds = sorted(json.loads(Path(p).read_text())["skill"] for p in result["receipts"])
    assert kinds == ["merge"] + ["tally"] * len(archives)
    tally = json.loads(Path(result["receipts"][0]).read_text())
    assert tally["artifact"]["page_count"] > 1, "the tally steps were paged"
