"""`runx mcp serve` against the official Python SDK (`mcp` on PyPI): `stdio_client` and
`ClientSession`, both the `initialize` handshake and `server/discover` (2026-07-28).

    RUNX_BIN=target/release/runx python -m pytest mcp/tests/sdk/test_python_sdk.py
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Awaitable, Callable, List, Optional, Tuple

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "skill-fixtures"
RUNX = os.environ.get("RUNX_BIN", str(ROOT / "target" / "release" / "runx"))


def server(workspace: str, *extra: str) -> StdioServerParameters:
    packages = [str(FIXTURES / p) for p in ("hello", "archive", "hostile")]
    return StdioServerParameters(
        command=RUNX,
        args=["mcp", "serve", *packages, *extra],
        env={"REGION": "eu-west"},
        cwd=workspace,
    )


def with_session(
    body: Callable[[ClientSession, str], Awaitable[None]], *extra: str, modern: bool = False
) -> None:
    async def main() -> None:
        with tempfile.TemporaryDirectory(prefix="runx-mcp-py-") as ws:
            async with stdio_client(server(ws, *extra)) as (read, write):
                async with ClientSession(read, write) as session:
                    if modern:
                        found = await session.discover()
                        assert "2026-07-28" in found.supported_versions
                    else:
                        init = await session.initialize()
                        assert init.protocol_version == "2025-11-25"
                        assert init.server_info.name == "runx"
                    await body(session, ws)

    anyio.run(main)


def receipt(result: Any) -> dict:
    meta = (result.meta or {})["runx/receipt"]
    document = json.loads(Path(meta["path"]).read_text())
    assert document["id"] == meta["id"] and document["digest"] == meta["digest"]
    # The run's status is in this runtime's evidence, which the receipt carries.
    evidence: dict = document["metadata"]["evidence"]
    assert evidence["status"] == meta["status"]
    return evidence


def error_of(result: Any) -> dict:
    """runx's {kind, code, message} of a failed result, after checking runx's shape: the
    text block "SKILL failed. Inspect receipt ID. MESSAGE" and structuredContent.runx."""
    assert result.is_error, result
    error: dict = (result.meta or {})["runx/error"]
    runx = result.structured_content["runx"]
    assert runx["status"] == "failed" and "output" not in runx, runx
    text = result.content[0].text
    assert text.startswith(f"{runx['skillName']} failed. Inspect receipt {runx['receiptId']}. "), text
    assert text.endswith(error["message"]), text
    return error


def test_list_tools_and_a_call_with_structured_output() -> None:
    async def body(session: ClientSession, ws: str) -> None:
        listed = await session.list_tools()
        names = [t.name for t in listed.tools]
        assert "hello" in names and "archive" in names and "hostile.spin" in names
        greet = next(t for t in listed.tools if t.name == "hello")
        assert greet.input_schema["required"] == ["name"]
        assert greet.output_schema is not None and greet.annotations.read_only_hint is True
        result = await session.call_tool("hello", {"name": "Ada"})
        assert not result.is_error
        assert result.structured_content["output"]["greeting"] == "Hello, Ada."
        assert result.structured_content["output"]["region"] == "eu-west"
        assert json.loads(result.content[0].text) == result.structured_content["output"]
        assert result.structured_content["runx"]["status"] == "completed"
        assert result.structured_content["runx"]["skillName"] == "hello"
        assert receipt(result)["status"] == "sealed"

    with_session(body)


def test_a_failing_call_and_an_invalid_argument() -> None:
    async def body(session: ClientSession, ws: str) -> None:
        failed = await session.call_tool("hello.wrong-output", {})
        assert error_of(failed)["kind"] == "output_rejected"
        assert receipt(failed)["status"] == "failure"
        invalid = await session.call_tool("hello", {"name": 7})
        error = error_of(invalid)
        assert error["kind"] == "input" and "`name`" in error["message"], error

    with_session(body)


def test_progress_on_a_paged_run() -> None:
    seen: List[Tuple[float, Optional[float], Optional[str]]] = []

    async def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
        seen.append((progress, total, message))

    async def body(session: ClientSession, ws: str) -> None:
        result = await session.call_tool(
            "archive",
            {"archive_file": "data/tweets.js", "archive_base": "skill"},
            progress_callback=on_progress,
        )
        assert not result.is_error, result
        assert seen, "no progress notification"
        done = [p for p, _, _ in seen]
        assert done == sorted(done) and seen[-1][0] == seen[-1][1]

    with_session(body)


def test_cancel_a_spinning_call_then_a_good_call() -> None:
    async def body(session: ClientSession, ws: str) -> None:
        with anyio.move_on_after(0.4):
            await session.call_tool("hostile.spin", {})
            raise AssertionError("the spin answered")
        good = await session.call_tool("hello", {"name": "Bo"})
        assert good.structured_content["output"]["greeting"] == "Hello, Bo."
        # The cancelled run wrote its receipt: interrupted, not timed out.
        receipts = Path(ws) / ".runx" / "receipts"
        for _ in range(100):
            # This runtime's evidence of each run, carried in its runx receipt.
            spins = [
                json.loads(p.read_text())["metadata"]["evidence"]
                for p in receipts.glob("sha256-*.json")
                if json.loads(p.read_text())["metadata"]["evidence"]["runner"] == "spin"
            ]
            if spins:
                break
            await anyio.sleep(0.05)
        assert [s["failure"]["kind"] for s in spins] == ["interrupted"], spins

    with_session(body, "--pool-size", "1")


def test_the_2026_revision_without_a_handshake() -> None:
    async def body(session: ClientSession, ws: str) -> None:
        listed = await session.list_tools()
        assert "hello" in [t.name for t in listed.tools]
        result = await session.call_tool("hello", {"name": "Cy"})
        assert result.structured_content["output"]["greeting"] == "Hello, Cy."
        assert receipt(result)["status"] == "sealed"

    with_session(body, modern=True)
