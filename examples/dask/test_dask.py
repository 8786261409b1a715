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
PATHS = [HERE]
try:
    import runx_client  # noqa: F401 - installed (pip install ./clients/python), as CI tests it
except ImportError:  # the source tree, for a quick run without installing
    PATHS.append(ROOT / "clients" / "python")
for path in PATHS:
    sys.path.insert(0, str(path))
# Worker processes import the plugin (and the client) by name: give them the same path.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(p) for p in PATHS] + [os.environ.get("PYTHONPATH", "")]
)

from distributed import Client, LocalCluster  # noqa: E402

from make_archives import make_archives  # noqa: E402
from runx_dask import (  # noqa: E402
    PLUGIN,
    SKILLS,
    RunxServe,
    collect_receipts,
    has_key,
    step_key,
    tally_archives,
    verify_receipts,
)

#: A throwaway signing key (the seed is public: tests only), as a key file's lines.
SIGN_KEY = {
    "RUNX_RECEIPT_SIGN_KID": "dask-tests",
    "RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    "RUNX_RECEIPT_SIGN_ISSUER_TYPE": "ci",
}


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
    assert result["schema"] == "runx.skill_run.v1", result
    assert result["status"] == "sealed" and result["outcome"] == "completed", result
    return result["result"]


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
    assert result["result"] == sequential
    assert result["result"]["archives"] == 6 and result["result"]["orders"] == 6 * 1500

    assert len(result["receipts"]) == len(archives) + 1
    for path, receipt_id, body in zip(result["receipts"], result["receipt_ids"], result["receipt_bodies"]):
        receipt = json.loads(Path(path).read_text())
        assert receipt["schema"] == "runx.receipt.v1" and receipt["id"] == receipt_id
        assert Path(path).name == receipt_id.replace(":", "-") + ".json"
        assert receipt["metadata"]["evidence"]["status"] == "sealed"
        assert receipt["seal"]["disposition"] == "closed"
        assert receipt == body, "the receipt that travelled is not the one written"
        assert Path(path).parent == receipts
    evidence = [json.loads(Path(p).read_text())["metadata"]["evidence"] for p in result["receipts"]]
    assert sorted(e["skill"] for e in evidence) == ["merge"] + ["tally"] * len(archives)
    assert evidence[0]["artifact"]["page_count"] > 1, "the tally steps were paged"

    collected = collect_receipts(result["receipt_bodies"], tmp_path / "collected")
    assert [p.name for p in collected] == [Path(p).name for p in result["receipts"]]
    if has_key(None, None):
        return  # this environment gave the workers a signing key: the next test checks those
    # Made without a key, the receipts verify for integrity only, as runx allows.
    assert {b["issuer"]["type"] for b in result["receipt_bodies"]} == {"local"}
    unsigned = {k: v for k, v in os.environ.items() if not k.startswith("RUNX_RECEIPT_")}
    report = verify_receipts(collected, runx_bin, env=unsigned)
    assert report["status"] == "verified" and report["verified"] == len(collected), report
    assert report["allow_local_development_signatures"] is True
    # Without the flag, runx will not verify them (no key) and says how.
    report = verify_receipts(collected, runx_bin, env=unsigned, allow_local_development_signatures=False)
    assert report["status"] == "usage" and "--allow-local-development-signatures" in report["error"], report


def test_repeated_calls_with_other_parameters_run_again_and_their_receipts_verify(
    runx_bin: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    archives = make_archives(data, count=3, orders=300)
    key_file = tmp_path / "sign.key"
    key_file.write_text("".join(f"{k}={v}\n" for k, v in SIGN_KEY.items()))
    key_file.chmod(0o600)
    calls = [tmp_path / f"receipts-{n}" for n in range(6)]
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as dask:
        dask.register_plugin(RunxServe(runx=runx_bin, sign_key=str(key_file)))
        # Back to back, each with its own receipt directory: every call runs every step.
        results = [
            tally_archives(dask, str(data), archives, receipt_dir=str(d)) for d in calls
        ]
    for receipt_dir, result in zip(calls, results):
        written = sorted(receipt_dir.glob("*.json"))
        assert len(written) == len(archives) + 1, (receipt_dir, written)
        assert sorted(Path(p) for p in result["receipts"]) == written
        assert result["result"] == results[0]["result"]
    all_ids = [b["id"] for r in results for b in r["receipt_bodies"]]
    assert len(set(all_ids)) == 6 * (len(archives) + 1), "a call returned another call's receipts"
    assert all_ids == [i for r in results for i in r["receipt_ids"]]
    for body in (b for r in results for b in r["receipt_bodies"]):
        assert body["issuer"]["kid"] == "dask-tests", "signed by the plugin's key"

    # The receipts travelled with the results: collected here, they verify, and a changed
    # one does not.
    collected = tmp_path / "collected"
    paths = collect_receipts([b for r in results for b in r["receipt_bodies"]], collected)
    assert all(p.name.startswith("sha256-") for p in paths)
    report = verify_receipts(paths, runx_bin, env=SIGN_KEY)
    assert report["status"] == "verified" and report["verified"] == len(paths), report
    assert report["allow_local_development_signatures"] is False, "a key verifies the signatures"
    tampered = json.loads(paths[0].read_text())
    tampered["metadata"]["evidence"]["output_digest"] = "sha256:" + "0" * 64
    paths[0].write_text(json.dumps(tampered))
    report = verify_receipts(paths, runx_bin, env=SIGN_KEY)
    assert report["status"] == "failed" and report["failed"] == 1, report
    # A signed receipt does not pass as a local-development one: integrity-only verification
    # refuses its signature.
    report = verify_receipts(paths[1:2], runx_bin, env={}, allow_local_development_signatures=True)
    assert report["status"] == "failed" and report["failed"] == 1, report
    # A receipt id that is not a content address is not a path to write to; the same receipt
    # collected twice is one file; another document under an id already collected is refused.
    for bad in ("../escape", "sha256:../x", "1796156646286-1205-0", "sha256:" + "A" * 64):
        with pytest.raises(ValueError):
            collect_receipts([{"id": bad}], collected)
    body = results[1]["receipt_bodies"][0]  # not the one changed above
    name = body["id"].replace(":", "-") + ".json"
    assert collect_receipts([body], collected) == [collected / name]
    twin = dict(body, created_at="2000-01-01T00:00:00.000Z")
    with pytest.raises(FileExistsError):
        collect_receipts([twin], collected)
    assert json.loads((collected / name).read_text()) == body


def test_task_keys_follow_the_parameters() -> None:
    inputs = {"archive_file": "archive-000.json"}
    same = step_key("tally", "/s/tally", dict(inputs), "/data", "/r1")
    assert same == step_key("tally", "/s/tally", dict(inputs), "/data", "/r1")
    assert same != step_key("tally", "/s/tally", dict(inputs), "/data", "/r2")
    assert same != step_key("tally", "/s/tally", {"archive_file": "archive-001.json"}, "/data", "/r1")
    assert same != step_key("tally", "/s/tally", dict(inputs), "/other", "/r1")
