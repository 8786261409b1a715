"""The Python client against the real `runx serve`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from runx_client import BusyError, Client, Progress, RunxError, ServerGone, StepResult


def test_run_returns_what_runx_skill_json_prints(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        served = runx.run("steps", {"name": "Ada"}, env={"REGION": "eu"})
    cli = subprocess.run(
        [runx_bin, "skill", "steps", "--inputs", "-", "--json"],
        input=json.dumps({"name": "Ada"}).encode(),
        capture_output=True,
        cwd=workspace,
        env={"REGION": "eu"},
        check=True,
    )
    printed = json.loads(cli.stdout)
    assert served.receipt_path is not None and Path(served.receipt_path).is_file()
    assert printed["schema"] == served.schema == "runx.skill_run.v1"

    # The same envelope, but for what names this one run's receipt (and when it closed).
    def same(obj: dict) -> dict:
        rest = {k: v for k, v in obj.items() if k not in ("receipt_path", "receipt_id", "closure")}
        closure = dict(obj["closure"])
        del closure["closed_at"]
        return dict(rest, closure=closure)

    assert same(served.raw) == same(printed)
    # The run id is derived from the package and the inputs: the same for both runs.
    assert served.run_id == printed["run_id"] and re.fullmatch(r"run_echo_[0-9a-f]{16}", served.run_id)
    assert served.ok and served.outcome == "completed" and served.status == "sealed"
    assert served.result == {"inputs": {"name": "Ada"}, "environment": {"REGION": "eu"}}
    assert (served.output, served.skill, served.receipt) == (
        served.result,
        served.skill_name,
        served.receipt_path,
    ), "the 0.2 names are aliases"
    assert served.skill_name == "steps" and served.runner == "echo"
    assert served.error is None and "error" not in served.raw and served.next is None
    assert served.closure is not None and served.closure["disposition"] == "closed"
    assert served.closure["reason_code"] == "process_closed"
    # The receipt is content-addressed: its file is named after its id, which it holds.
    assert served.receipt_id is not None and re.fullmatch(r"sha256:[0-9a-f]{64}", served.receipt_id)
    assert Path(served.receipt_path).name == served.receipt_id.replace(":", "-") + ".json"
    receipt = json.loads(Path(served.receipt_path).read_text())
    assert receipt["schema"] == "runx.receipt.v1" and receipt["id"] == served.receipt_id
    assert receipt["metadata"]["evidence"]["skill"] == "steps"
    assert served.console == [{"level": "log", "message": "echo"}]


def test_a_failed_step_raises_runx_error_with_kind_and_code(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        with pytest.raises(RunxError) as caught:
            runx.run("steps", runner="needs-region")
        assert (caught.value.kind, caught.value.code) == ("environment", "missing_environment")
        assert "REGION" in caught.value.message
        assert caught.value.receipt is not None and Path(caught.value.receipt).is_file()
        assert caught.value.receipt_id is not None and caught.value.outcome == "failed"
        result = runx.run("steps", runner="needs-region", check=False)
        assert isinstance(result, StepResult) and not result.ok
        # runx's convention: the receipt was written, so the run is "sealed"; it failed.
        assert (result.status, result.outcome) == ("sealed", "failed")
        assert result.error is not None and result.error["kind"] == "environment"
        assert result.error["code"] == "missing_environment" and "exit_code" in result.error
        assert result.result is None and result.output is None
        assert result.closure is not None and result.closure["disposition"] == "failed"
        assert result.receipt_id is not None and result.receipt_path is not None
        receipt = json.loads(Path(result.receipt_path).read_text())
        assert receipt["id"] == result.receipt_id
        assert receipt["metadata"]["evidence"]["status"] == "failure"
        assert receipt["metadata"]["evidence"]["failure"]["code"] == "missing_environment"


def test_inputs_refused_before_the_run_are_blocked(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        with pytest.raises(RunxError) as caught:
            runx.run("steps", {"after": "not a boolean"})
        assert caught.value.kind == "input" and caught.value.outcome == "blocked"
        result = caught.value.result
        assert result is not None and result.status == "sealed" and result.outcome == "blocked"
        assert result.closure is not None and result.closure["disposition"] == "blocked"
        assert result.closure["reason_code"] == "preflight_refused"
        assert result.receipt_path is not None and Path(result.receipt_path).is_file()


def test_a_receipt_that_cannot_be_written_is_a_failure_with_no_receipt(
    runx_bin: str, workspace: Path
) -> None:
    (workspace / "a-file").write_text("")
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        with pytest.raises(RunxError) as caught:
            runx.run("steps", {"x": 1}, receipt_dir="a-file/receipts")
    assert (caught.value.kind, caught.value.code) == ("receipt", "receipt_write")
    result = caught.value.result
    assert result is not None and (result.status, result.outcome) == ("failure", "failed")
    assert result.receipt_id is None and result.receipt_path is None and result.closure is None
    # Its output is kept: the step ran, only its receipt is missing.
    assert result.result == {"inputs": {"x": 1}, "environment": {}}


def test_inspect_and_a_package_that_does_not_load(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        described = runx.inspect("steps")
        assert described["skill"] == "steps"
        assert [r["name"] for r in described["runners"]] == sorted(r["name"] for r in described["runners"])
        with pytest.raises(RunxError) as caught:
            runx.inspect("no-such-package")
        assert caught.value.kind == "profile"


def test_threads_share_one_server_and_answers_come_out_of_order(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=2, queue=64) as runx:
        slow = runx.submit("steps", {"seconds": 2}, runner="sleep")
        fast = runx.submit("steps", {"x": 1})
        assert fast.result(10).output["inputs"] == {"x": 1}
        assert not slow.done(), "the fast step waited for the slow one"
        results: dict[int, object] = {}

        def work(n: int) -> None:
            results[n] = runx.run("steps", {"n": n}).output["inputs"]["n"]

        threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == {n: n for n in range(16)}
        assert slow.result(10).ok


def test_cancel_and_timeout_interrupt_the_step(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        step = runx.submit("steps", runner="spin")
        time.sleep(0.3)
        started = time.monotonic()
        assert step.cancel() is True
        with pytest.raises(RunxError) as caught:
            step.result(10)
        assert (caught.value.kind, caught.value.code) == ("interrupted", "interrupted")
        assert time.monotonic() - started < 5
        assert step.cancel() is False, "nothing left to cancel"
        with pytest.raises(TimeoutError):
            runx.run("steps", runner="spin", timeout=0.5)
        assert runx.run("steps", {"after": True}).ok


def test_busy_is_its_own_error_without_backpressure(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=1, queue=0, backpressure=False) as runx:
        slow = runx.submit("steps", {"seconds": 0.5}, runner="sleep")
        with pytest.raises(BusyError) as caught:
            runx.run("steps")
        assert caught.value.code == -32001
        assert caught.value.data["pool_size"] == 1
        assert slow.result(10).ok


def test_progress_reaches_the_callback(runx_bin: str, workspace: Path) -> None:
    seen: list[Progress] = []
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        result = runx.run("steps", {"file": "items.json"}, runner="count", on_progress=seen.append)
    assert result.output == {"n": 30}
    assert len(seen) > 2
    assert [p.page_index for p in seen] == list(range(len(seen)))
    assert seen[-1].bytes == seen[-1].total_bytes == (workspace / "items.json").stat().st_size


def test_the_with_block_stops_the_server(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        pid = runx.pid
        runx.run("steps")
    assert runx._proc.returncode == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # Leaving on an exception cancels what is still running instead of waiting for it.
    started = time.monotonic()
    with pytest.raises(KeyError):
        with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
            step = runx.submit("steps", runner="spin")
            time.sleep(0.2)
            raise KeyError("boom")
    with pytest.raises(RunxError) as caught:
        step.result(1)
    assert caught.value.kind == "interrupted"
    assert time.monotonic() - started < 10


def test_a_dead_server_fails_pending_steps(runx_bin: str, workspace: Path) -> None:
    runx = Client(runx_bin, cwd=workspace, pool_size=1, stderr=subprocess.DEVNULL)
    try:
        step = runx.submit("steps", {"seconds": 1}, runner="sleep")
        time.sleep(0.2)
        runx._proc.kill()
        with pytest.raises(ServerGone):
            step.result(10)
        with pytest.raises(ServerGone):
            runx.run("steps")
    finally:
        runx.close()
