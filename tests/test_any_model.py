"""Every CLI command and every graph of langgraph.json under a "valid but random" model.

The model (:class:`~personae.testing.ScriptedChatModel` with ``random_seed``) gives answers that
follow the schema it is given and are otherwise random: random enum members, ids the schema
allows but the prompt never showed, empty lists where allowed, minimum-length (often blank)
strings. Every run must end either with exit 0 and its output, or with the one-line "nothing
usable left" error (exit 3): never a traceback, never another error, never a half-written
output. In process, on the tiny inputs of ``tests/any_model_world.py`` (loopback wiki and
Tavily, a storyline, a persona, the synthetic novel with a fixture arc and probe).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from any_model_world import JOBS, Job, run_job
from profiler_world import fake_web
from studio_world import GRAPHS, graph_module, prepare, run_context, run_input

from personae.errors import NothingUsableError
from personae.loopback import LoopbackWebServer
from personae.testing import ScriptedChatModel, override_models

pytestmark = pytest.mark.endtoend


NOTHING_USABLE = "personae: error: nothing usable left: "


@pytest.mark.parametrize("job", JOBS, ids=[job.name for job in JOBS])
def test_every_command_ends_with_its_output_or_the_one_line_zero_usable_error(
    job: Job, tmp_path: Path
) -> None:
    outcome = run_job(job, tmp_path, seed=16)
    assert "Traceback" not in outcome.err
    if outcome.exit_code != 0:
        last = outcome.err.strip().splitlines()[-1]
        assert (outcome.exit_code, last[: len(NOTHING_USABLE)]) == (3, NOTHING_USABLE), last
        return
    if job.output:
        assert list(tmp_path.glob(job.output)), f"{job.name} wrote no {job.output}"
    else:
        assert outcome.out.strip(), f"{job.name} printed nothing"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The README's files in the working directory, the fake web, the random model."""
    monkeypatch.chdir(tmp_path)
    prepare(tmp_path)
    override_models(ScriptedChatModel(random_seed=16))
    web, _, _ = fake_web()
    with LoopbackWebServer(web.route) as server:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        yield server.url


OUTPUT_KEYS = {
    "profiler": "profile",
    "amadeus": "response",
    "arcane_roleplay": "response",
    "arc_build": "arcs",
    "probe_build": "probes",
    "arcane_eval": "done",
}
"""The output each graph must hand back (the acting graphs: ``action``)."""


@pytest.mark.parametrize("graph", GRAPHS)
async def test_every_graph_ends_with_its_output_or_nothing_usable(world: str, graph: str) -> None:
    compiled: Any = importlib.import_module(graph_module(graph)).graph
    try:
        result = await compiled.ainvoke(run_input(graph, world), context=run_context(graph, True))
    except NothingUsableError as error:
        assert str(error).startswith("nothing usable left: ") and "\n" not in str(error)
        return
    key = OUTPUT_KEYS.get(graph, "action")
    assert key in result
    if key in ("profile", "response", "action"):
        assert str(result[key]).strip()
