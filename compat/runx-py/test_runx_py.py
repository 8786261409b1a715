"""runx's own Python SDK (`runx-py` 0.1.2 from PyPI, import name `runx`) against this runtime.

`RunxClient(command=[RUNX_BIN]).run_skill(path, inputs)` runs `RUNX skill PATH -i k=v ... --json`
and returns the printed object, raising `RunxCommandError` on a non-zero exit. These tests hold
this runtime to what that SDK expects of runx: a `runx.skill_run.v1` envelope, `status` `sealed`,
the output as `result`, and a `receipt_id` whose receipt runx's `verify` finds valid; and they
run runx's documented first command verbatim.

    pip install runx-py==0.1.2 pytest
    RUNX_BIN=target/release/runx python -m pytest compat/runx-py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List

import pytest

try:
    from runx import RunxClient, RunxCommandError
except ImportError as e:  # not installed, or another distribution's `runx` without the SDK
    # CI installs the SDK and sets RUNX_PY_REQUIRED: there a missing SDK fails, never skips.
    if os.environ.get("RUNX_PY_REQUIRED"):
        raise
    pytest.skip(
        f"runx's Python SDK is not importable ({e}): pip install runx-py==0.1.2",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "skill-fixtures"
SDK_VERSION = "0.1.2"
RECEIPT_ID = re.compile(r"sha256:[0-9a-f]{64}")
RUN_ID = re.compile(r"run_[A-Za-z0-9_-]+_[0-9a-f]{16}")


@pytest.fixture(scope="session")
def runx_bin() -> str:
    path = os.environ.get("RUNX_BIN") or str(ROOT / "target" / "release" / "runx")
    if not Path(path).is_file():
        pytest.fail(f"no runx binary at {path}; build it: cargo build --release -p runx-cli")
    return str(Path(path).resolve())


@pytest.fixture(autouse=True)
def no_ambient_runx(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK merges its `env` over this process's environment: nothing of the caller's may
    choose the receipt directory, sign, or give a runner its REGION."""
    for name in list(os.environ):
        if name.startswith("RUNX_RECEIPT_") or name == "REGION":
            monkeypatch.delenv(name)


@pytest.fixture()
def receipts(tmp_path: Path) -> Path:
    path = tmp_path / "receipts"
    path.mkdir()
    return path


def client(runx_bin: str, receipts: Path, **env: str) -> Any:
    return RunxClient(
        command=[runx_bin], cwd=str(ROOT), env={"RUNX_RECEIPT_DIR": str(receipts), **env}
    )


def runx(runx_bin: str, *args: str, env: Dict[str, str]) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        [runx_bin, *args], capture_output=True, text=True, env={**os.environ, **env}, check=False
    )


def receipt_files(receipts: Path) -> List[Path]:
    return sorted(receipts.glob("*.json"))


def assert_verifies(runx_bin: str, receipt_id: str, receipts: Path) -> Dict[str, Any]:
    """The receipt `receipt_id` is the file `sha256-<hex>.json` in `receipts`, and runx's
    `verify` finds it valid (integrity only: it was made without a key)."""
    path = receipts / (receipt_id.replace(":", "-", 1) + ".json")
    assert path.is_file(), (path, receipt_files(receipts))
    done = runx(
        runx_bin, "verify", "--receipt", str(path), "--allow-local-development-signatures", "--json", env={}
    )
    verdict: Dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == 0, (done.returncode, verdict, done.stderr)
    assert verdict["schema"] == "runx.verify_verdict.v1" and verdict["valid"] is True, verdict
    assert verdict["receipt_id"] == receipt_id
    assert verdict["signature"]["mode"] == "local-development"
    receipt: Dict[str, Any] = json.loads(path.read_text())
    assert receipt["schema"] == "runx.receipt.v1" and receipt["id"] == receipt_id
    return receipt


def assert_sealed(run: Dict[str, Any], output: Any, receipts: Path, runner: str) -> None:
    """What the SDK's callers read of a completed run."""
    assert run["schema"] == "runx.skill_run.v1", run
    assert run["status"] == "sealed" and run["outcome"] == "completed", run
    assert run["result"] == output
    assert "error" not in run and run["next"] is None
    assert run["runner"] == runner and RUN_ID.fullmatch(run["run_id"]), run["run_id"]
    assert run["run_id"].startswith(f"run_{runner}_")
    assert RECEIPT_ID.fullmatch(run["receipt_id"]), run["receipt_id"]
    assert run["closure"]["disposition"] == "closed" and run["closure"]["reason_code"] == "process_closed"
    assert Path(run["receipt_path"]) == receipts / (run["receipt_id"].replace(":", "-") + ".json")


def test_the_sdk_is_the_published_runx_py() -> None:
    assert metadata.version("runx-py") == SDK_VERSION, "CI pins runx-py==0.1.2"
    assert callable(RunxClient.run_skill) and issubclass(RunxCommandError, RuntimeError)


def test_a_javascript_package(runx_bin: str, receipts: Path) -> None:
    run = client(runx_bin, receipts).run_skill("skill-fixtures/imports", {"values": [2, 3, 5]})
    assert_sealed(run, {"total": 10, "labels": ["#2/4", "#3/6", "#5/10"]}, receipts, "default")
    assert run["skill_name"] == "imports"
    receipt = assert_verifies(runx_bin, run["receipt_id"], receipts)
    assert receipt["metadata"]["evidence"]["runner_type"] == "javascript"
    # The run id is derived from the package and the inputs: the same run has the same id.
    again = client(runx_bin, receipts).run_skill("skill-fixtures/imports", {"values": [2, 3, 5]})
    assert again["run_id"] == run["run_id"] and again["receipt_id"] != run["receipt_id"]
    other = client(runx_bin, receipts).run_skill("skill-fixtures/imports", {"values": [2, 3]})
    assert other["run_id"] != run["run_id"]
    assert len(receipt_files(receipts)) == 3


def test_a_javascript_package_with_its_environment(runx_bin: str, receipts: Path) -> None:
    run = client(runx_bin, receipts, REGION="eu").run_skill("skill-fixtures/hello", {"name": "Ada"})
    assert_sealed(run, {"greeting": "Hello, Ada.", "region": "eu", "trace": None}, receipts, "greet")
    assert run["skill_name"] == "hello"
    assert_verifies(runx_bin, run["receipt_id"], receipts)


def test_a_cli_tool_package(runx_bin: str, receipts: Path) -> None:
    run = client(runx_bin, receipts).run_skill("skill-fixtures/hello-world", {"message": "hi from runx-py"})
    assert_sealed(run, {"message": "hi from runx-py"}, receipts, "default")
    assert run["skill_name"] == "hello-world"
    assert run["stderr"]["total_bytes"] == 0
    receipt = assert_verifies(runx_bin, run["receipt_id"], receipts)
    assert receipt["metadata"]["evidence"]["runner_type"] == "cli-tool"
    assert receipt["metadata"]["evidence"]["process"]["exit_code"] == 0


def test_a_failing_run_raises_the_sdks_error(runx_bin: str, receipts: Path) -> None:
    # REGION is required by the runner and not given: the run fails (exit 1), sealed.
    with pytest.raises(RunxCommandError) as caught:
        client(runx_bin, receipts).run_skill("skill-fixtures/hello", {"name": "Ada"})
    assert caught.value.returncode == 1
    assert caught.value.args_list[:2] == ("skill", "skill-fixtures/hello")
    # The SDK keeps only stderr, and under --json runx says why the run failed on stdout only
    # (its envelope's `error`), so the SDK's error does not name the cause; the failed run's
    # receipt, which does, is in the receipt directory.
    (path,) = receipt_files(receipts)
    receipt = assert_verifies(runx_bin, path.stem.replace("-", ":", 1), receipts)
    assert receipt["seal"]["disposition"] == "failed"
    assert receipt["metadata"]["evidence"]["failure"]["code"] == "missing_environment"

    # Inputs refused before the run: exit 64, a receipt of the refusal all the same.
    with pytest.raises(RunxCommandError) as caught:
        client(runx_bin, receipts).run_skill("skill-fixtures/imports", {"values": "not a list"})
    assert caught.value.returncode == 64
    refused = [p for p in receipt_files(receipts) if p != path]
    assert len(refused) == 1
    receipt = assert_verifies(runx_bin, refused[0].stem.replace("-", ":", 1), receipts)
    assert receipt["seal"]["disposition"] == "blocked"

    # A package that is not there: no run, no receipt.
    with pytest.raises(RunxCommandError) as caught:
        client(runx_bin, receipts).run_skill("skill-fixtures/no-such-package", {})
    assert caught.value.returncode != 0
    assert len(receipt_files(receipts)) == 2


def test_a_skill_md_path_runs_its_package(runx_bin: str, receipts: Path, tmp_path: Path) -> None:
    """runx's SDK passes what it is given as the package; runx takes a SKILL.md for its folder."""
    package = tmp_path / "hello-world"
    shutil.copytree(FIXTURES / "hello-world", package)
    (package / "SKILL.md").write_text("# hello-world\n")
    run = client(runx_bin, receipts).run_skill(str(package / "SKILL.md"), {"message": "hi"})
    assert_sealed(run, {"message": "hi"}, receipts, "default")


@pytest.mark.parametrize(
    ("call", "command"),
    [
        (lambda c: c.search_skills("triage"), "registry"),
        (lambda c: c.continue_run("skill-fixtures/hello", "run_default_0", "answers.json"), "resume"),
    ],
)
def test_hosted_side_calls_raise_with_the_reason(runx_bin: str, receipts: Path, call: Any, command: str) -> None:
    """`search_skills` and `continue_run` call runx's hosted side, which this runtime does not
    have: the SDK raises its error (exit 1, as runx) with the line saying so and what to use."""
    with pytest.raises(RunxCommandError) as caught:
        call(client(runx_bin, receipts))
    assert caught.value.returncode == 1
    assert caught.value.args_list[0] == command
    assert caught.value.stderr.startswith(f"runx: `runx {command}` "), caught.value.stderr
    assert "runx skill DIR" in caught.value.stderr
    assert receipt_files(receipts) == []


def test_the_documented_first_command_works_verbatim(runx_bin: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(FIXTURES / "hello-world", work / "examples" / "hello-world")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "runx").symlink_to(runx_bin)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["TMPDIR"] = str(tmp_path)  # where `mktemp -d` makes the receipt directory
    command = (
        'RUNX_RECEIPT_DIR=$(mktemp -d) runx skill examples/hello-world --message "hello from docs" '
        "--non-interactive --json"
    )
    done = subprocess.run(
        ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    run = json.loads(done.stdout)
    receipts = Path(run["receipt_path"]).parent
    assert receipts.parent == tmp_path, "the receipt went where RUNX_RECEIPT_DIR said"
    assert_sealed(run, {"message": "hello from docs"}, receipts, "default")
    receipt_id = run["receipt_id"]

    history = subprocess.run(
        ["bash", "-c", f"runx history {receipt_id} --json"],
        cwd=work,
        env={**env, "RUNX_RECEIPT_DIR": str(receipts)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert history.returncode == 0, (history.stdout, history.stderr)
    shown = json.loads(history.stdout)
    assert shown["receipt"]["id"] == receipt_id and Path(shown["file"]) == Path(run["receipt_path"])
    assert shown["verification"]["verdict"]["valid"] is True
    # Made without a key: intact, but no signer is proven.
    assert shown["verification"]["status"] == "unverified"

    listed = subprocess.run(
        ["runx", "history", "--json", "--receipt-dir", str(receipts)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)["receipts"]
    assert [e["id"] for e in entries] == [receipt_id]
    assert entries[0]["skill"] == "hello-world" and entries[0]["verification"]["status"] == "unverified"
