"""The character's own wiki page is evidence: read before any search, so empty searches still profile.

A weak model's queries may find nothing (the real-model lane's SmolLM2 planned seven queries that
matched no page); the page the profiler found is then all it has, and it must be enough.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from profiler_world import profiler_context, scripted_model, serve_fake_web

from personae.errors import InputError
from personae.evals.characterhub.profile_eval import ProfileDocument, leaked_source_ids
from personae.graphs.characterhub.profiler import graph
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.testing import ScriptedChatModel, override_models

HOKUTO = "Fist of the North Star"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    with serve_fake_web(monkeypatch) as running:
        yield running


def nowhere_plan(messages: list[BaseMessage]) -> dict[str, Any]:
    """Queries that match no page of the wiki (what a weak model plans)."""
    return {"queries": [{"dimension": d, "query": f"qzx {d} vwy"} for d in DIMENSIONS]}


def nowhere_searches(messages: list[BaseMessage]) -> dict[str, Any]:
    """The paper agent's searches, likewise matching nothing."""
    return {"queries": ["qzx vwy"]}


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    scripted.responders["QueryPlan"] = nowhere_plan
    scripted.responders["SearchQueries"] = nowhere_searches
    override_models(specs={"openai:page-test": scripted})
    yield scripted


ONE_ROUND_WIKI_ONLY: dict[str, Any] = {"web_search": False, "max_rounds": 1}
"""The real-model lane's settings (``--no-web --max-rounds 1``)."""


async def run(server: LoopbackWebServer, **changes: Any) -> dict[str, Any]:
    result: dict[str, Any] = await graph.ainvoke(
        {"name": "Kenshiro", "franchise": HOKUTO, "wiki_url": server.url},
        context=profiler_context(server, "page-test", **{**ONE_ROUND_WIKI_ONLY, **changes}),
    )
    return result


async def test_searches_that_find_nothing_still_profile_from_the_found_page(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server)
    page = f"{server.url}/wiki/Kenshiro"
    assert result["wiki_page"] == page
    urls = [s["url"] for s in result["sources"]]
    assert result["usage"]["searches"] == 7  # none found anything: every source is the page
    # Cut by section, each section a source of its own (the infobox-less lead is the page).
    assert urls == [page, *(f"{page}#{h}" for h in DIMENSION_HEADINGS)]
    assert [s["id"] for s in result["sources"]] == [f"S{i}" for i in range(1, len(urls) + 1)]
    personality = next(s for s in result["sources"] if s["url"].endswith("#Personality"))
    assert "stoic and quiet" in personality["content"]
    assert result["rounds"][0]["results"] == len(urls) and result["rounds"][0]["notes"]
    assert result["profile"].startswith("I am Kenshiro")
    assert result["stop_reason"] == "coverage_reached"


DIMENSION_HEADINGS = ("Appearance", "Personality", "Abilities", "Relationships", "History")


async def test_the_page_passages_are_capped_in_size(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server, passage_chars=60, evidence_chars=100)
    # Half the reading budget, at least one passage: the lead alone, cut at the passage cap.
    [lead] = result["sources"]
    assert lead["url"] == f"{server.url}/wiki/Kenshiro"
    assert (
        lead["content"].startswith("Kenshiro\nKenshiro is the 64th") and len(lead["content"]) <= 60
    )


async def test_an_excluded_page_is_never_read(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    page = f"{server.url}/wiki/Kenshiro"
    with pytest.raises(InputError, match="found nothing about 'Kenshiro' .all_searches_empty."):
        await run(server, exclude_urls=(page,))


async def test_one_excluded_section_leaves_the_others(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    page = f"{server.url}/wiki/Kenshiro"
    result = await run(server, exclude_urls=(f"{page}#History",))
    urls = [s["url"] for s in result["sources"]]
    assert f"{page}#History" not in urls and f"{page}#Personality" in urls


async def test_the_paper_method_reads_only_what_its_searches_return(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    with pytest.raises(InputError, match="found nothing about 'Kenshiro' in 2 search round"):
        await run(server, method="paper", max_rounds=2)


async def test_eval_flags_a_profile_citing_its_own_reference_page(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server)
    document = ProfileDocument(
        character="Kenshiro",
        profile=result["profile"],
        sources=[{"id": s["id"], "url": s["url"]} for s in result["sources"]],
    )
    leaked = leaked_source_ids(document, [f"{server.url}/wiki/Kenshiro"])
    assert leaked == [s["id"] for s in result["sources"]]
