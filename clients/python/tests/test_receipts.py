"""Receipts that travel with their results, and the client as the package pip installs."""

from __future__ import annotations

import json
import os
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT, SIGN_KEY

import runx_client
from runx_client import Client, RunxError


def test_receipt_body_is_returned_and_verifies_elsewhere(
    runx_bin: str, workspace: Path, tmp_path: Path
) -> None:
    collected = tmp_path / "collected"
    collected.mkdir()
    with Client(runx_bin, cwd=workspace, pool_size=1, env=SIGN_KEY) as runx:
        sealed = runx.run("steps", {"name": "Ada"}, receipt_body=True)
        with pytest.raises(RunxError) as caught:
            runx.run("steps", runner="needs-region", receipt_body=True)
        plain = runx.run("steps")
    failed = caught.value.result
    assert failed is not None
    for result in (sealed, failed):
        assert result.status == "sealed"
        assert result.receipt_path is not None and result.receipt_body is not None
        assert result.receipt_body == json.loads(Path(result.receipt_path).read_text())
        assert result.receipt_body["schema"] == "runx.receipt.v1"
        assert result.receipt_body["id"] == result.receipt_id
        assert result.receipt_body["issuer"]["kid"] == "client-tests"
        assert result.receipt_body["metadata"]["evidence"]["runner"] == result.runner
        name = f"{result.receipt_id.replace(':', '-')}.json"
        assert Path(result.receipt_path).name == name
        (collected / name).write_text(json.dumps(result.receipt_body))
    assert failed.receipt_body["metadata"]["evidence"]["status"] == "failure"
    assert plain.receipt_body is None and "receipt_body" not in plain.raw

    # The collected documents verify on their own, away from the receipt directory.
    done = subprocess.run(
        [runx_bin, "receipt", "verify", "--json", str(collected)],
        capture_output=True,
        env=SIGN_KEY,
        check=False,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, report
    assert (report["verified"], report["failed"]) == (2, 0)
    assert {r["kid"] for r in report["receipts"]} == {"client-tests"}
    # And one at a time through `runx verify`, whose verdict says the key was a real one.
    verdict = verify(runx_bin, collected / f"{sealed.receipt_id.replace(':', '-')}.json", SIGN_KEY)
    assert verdict["valid"] is True and verdict["signature"]["mode"] == "production", verdict


def no_key_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("RUNX_RECEIPT_")}


def verify(runx_bin: str, path: Path, env: dict, *flags: str) -> dict:
    done = subprocess.run(
        [runx_bin, "verify", "--receipt", str(path), *flags, "--json"],
        capture_output=True,
        env=env,
        check=False,
    )
    verdict = json.loads(done.stdout)
    assert done.returncode == (0 if verdict.get("valid") else 3), (done.returncode, verdict)
    assert verdict["schema"] == "runx.verify_verdict.v1", verdict
    return dict(verdict)


def test_unsigned_receipts_verify_for_integrity_only_when_asked(
    runx_bin: str, workspace: Path, tmp_path: Path
) -> None:
    env = no_key_env()
    with Client(runx_bin, cwd=workspace, pool_size=1, env=env) as runx:
        result = runx.run("steps", {"name": "Ada"}, receipt_body=True)
    assert result.receipt_path is not None and result.receipt_body is not None
    # A receipt made without a key has a "local-development" signature.
    assert result.receipt_body["issuer"]["type"] == "local"
    receipts = Path(result.receipt_path).parent

    refused = subprocess.run(
        [runx_bin, "receipt", "verify", "--json", str(receipts)], capture_output=True, env=env, check=False
    )
    assert refused.returncode == 64, refused
    assert "--allow-local-development-signatures" in json.loads(refused.stdout)["error"]
    allowed = subprocess.run(
        [runx_bin, "receipt", "verify", "--allow-local-development-signatures", "--json", str(receipts)],
        capture_output=True,
        env=env,
        check=False,
    )
    report = json.loads(allowed.stdout)
    assert allowed.returncode == 0 and report["status"] == "verified", report

    path = Path(result.receipt_path)
    verdict = verify(runx_bin, path, env, "--allow-local-development-signatures")
    assert verdict["valid"] is True and verdict["receipt_id"] == result.receipt_id
    assert verdict["signature"]["mode"] == "local-development"
    # A changed receipt is not valid.
    changed = json.loads(path.read_text())
    changed["metadata"]["evidence"]["output_digest"] = "sha256:" + "0" * 64
    forged = tmp_path / path.name
    forged.write_text(json.dumps(changed))
    assert verify(runx_bin, forged, env, "--allow-local-development-signatures")["valid"] is False


def test_the_client_is_the_installed_package() -> None:
    if os.environ.get("RUNX_CLIENT_INSTALLED") != "1":
        pytest.skip("set RUNX_CLIENT_INSTALLED=1 after `pip install ./clients/python` (CI does)")
    assert metadata.version("runx-client") == runx_client.__version__
    installed = Path(runx_client.__file__).resolve().parent
    assert ROOT / "clients" not in installed.parents, f"imported from the tree: {installed}"
    assert (installed / "py.typed").is_file()
    assert {p.name for p in installed.glob("*.py")} >= {"client.py", "aio.py", "errors.py"}
