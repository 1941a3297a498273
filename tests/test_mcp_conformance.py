"""The official MCP conformance suite's generic server scenarios against ``personae mcp``.

``@modelcontextprotocol/conformance`` (pinned in tests/conformance_world.py, on the Node 22 of
the ``node@22`` npm package) plays a client against the real command over streamable HTTP.
Its other scenarios call the fixture tools, prompts and resources of the SDKs' "everything"
server (``test_simple_text``, ``test_reconnection``...), which Personae does not serve; the
generic ones check the protocol any server speaks. ``tools-call-error`` is among them: it
passes when an unknown tool comes back as a tool error (``isError``), which any server owes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conformance_world import INSTALL, installed
from mcp_world import serve_world

GENERIC = (
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-error",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
RESULT_FOLDER = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT[\d-]+Z$")


def suite_or_skip() -> tuple[Path, Path]:
    """Node 22 and the suite's CLI; skip without them (fail under CI, which installs them)."""
    found = installed()
    if found is not None:
        return found
    message = f"the MCP conformance suite is not installed (run: {INSTALL})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def checks_by_scenario(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each scenario's checks, as the suite saved them (``<out>/server-<scenario>-<time>/``)."""
    results: dict[str, list[dict[str, Any]]] = {}
    for folder in out.iterdir():
        matched = RESULT_FOLDER.match(folder.name)
        if matched is not None:
            checks = json.loads((folder / "checks.json").read_text())
            results[matched["scenario"]] = checks
    return results


@pytest.mark.slow
def test_the_generic_conformance_scenarios_pass_over_streamable_http(tmp_path: Path) -> None:
    from test_mcp_server import http_server

    node, cli = suite_or_skip()
    out, root = tmp_path / "conformance", tmp_path / "world"
    root.mkdir()
    with serve_world(root) as world, http_server(world) as url:
        # One run of the whole active suite (one Node start, about 2 s); it exits 1 for the
        # everything-server scenarios, so the generic ones are read from its saved checks.
        command = [str(node), str(cli), "server", "--url", url, "-o", str(out)]
        run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), f"{run.stdout}\n{run.stderr}"
    results = checks_by_scenario(out)
    assert set(GENERIC) <= set(results), run.stdout[-3000:]
    for scenario in GENERIC:
        checks = results[scenario]
        statuses = {check["status"] for check in checks}
        failed = [check for check in checks if check["status"] in ("FAILURE", "ERROR")]
        assert not failed and "SUCCESS" in statuses, f"{scenario}: {json.dumps(checks)[:2000]}"
