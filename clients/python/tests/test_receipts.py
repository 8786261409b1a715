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
        assert result.receipt is not None and result.receipt_body is not None
        assert result.receipt_body == json.loads(Path(result.receipt).read_text())
        assert result.receipt_body["signature"]["kid"] == "client-tests"
        (collected / f"{result.receipt_body['id']}.json").write_text(json.dumps(result.receipt_body))
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


def test_the_client_is_the_installed_package() -> None:
    if os.environ.get("RUNX_CLIENT_INSTALLED") != "1":
        pytest.skip("set RUNX_CLIENT_INSTALLED=1 after `pip install ./clients/python` (CI does)")
    assert metadata.version("runx-client") == runx_client.__version__
    installed = Path(runx_client.__file__).resolve().parent
    assert ROOT / "clients" not in installed.parents, f"imported from the tree: {installed}"
    assert (installed / "py.typed").is_file()
    assert {p.name for p in installed.glob("*.py")} >= {"client.py", "aio.py", "errors.py"}
