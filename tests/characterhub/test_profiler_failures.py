"""The profiler off its happy path: failed searches, no web, a wiki without the page, sources.

Real graph, real Tavily/MediaWiki/HTTP clients against a loopback web; only the LLM is scripted.
Retries do not sleep (the HTTP client's sleeper is replaced), so failure paths stay fast.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from fake_web import FakeTavily, FakeWeb
from profiler_world import WEB_PAGES, hokuto_wiki, profiler_context, scripted_model

from personae.graphs.characterhub import sources as profiler_sources
from personae.graphs.characterhub.evidence import CITE_REMINDER, ZERO_FACTS_WARNING
from personae.graphs.characterhub.profiler import assign_source_ids, graph
from personae.graphs.characterhub.sources import NO_WEB_NOTICE
from personae.graphs.characterhub.state import Passage, ProfilerContext, Source, merge_sources
from personae.loopback import LoopbackWebServer, free_port
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.memory.characterhub.profile_store import (
    DROPPED_OUTPUT,
    profile_document,
    render_markdown,
)
from personae.testing import ScriptedChatModel, override_models, prompt_text
from personae.tools.http import PoliteHttpClient
from personae.tools.wiki import WikiPageNotFound

HOKUTO = "Fist of the North Star"


async def _no_sleep(seconds: float) -> None:
    return None


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        profiler_sources, "PoliteHttpClient", functools.partial(PoliteHttpClient, sleep=_no_sleep)
    )


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    override_models(specs={"openai:failures": scripted})
    yield scripted


@pytest.fixture
def tavily() -> FakeTavily:
    """A web where every query finds the same two pages."""
    return FakeTavily(lambda payload: list(WEB_PAGES), api_key="tvly-test")


@pytest.fixture
def server(tavily: FakeTavily, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    with LoopbackWebServer(FakeWeb(tavily=tavily, wiki=hokuto_wiki()).route) as running:
        yield running


async def profile(server: LoopbackWebServer, name: str = "Kenshiro", **changes: Any) -> Any:
    return await graph.ainvoke(
        {"name": name, "franchise": HOKUTO, "wiki_url": server.url},
        context=profiler_context(server, "failures", **changes),
    )


@pytest.mark.parametrize("status", [503, 432])
async def test_failed_web_searches_are_counted_and_reported(
    server: LoopbackWebServer, tavily: FakeTavily, model: ScriptedChatModel, status: int
) -> None:
    tavily.fail_next(1000, status)
    result = await profile(server)
    assert result["usage"]["failed_searches"] == 7  # every web search of the round
    assert result["usage"]["searches"] == 14
    [notice] = result["notices"]
    assert notice.startswith("round 1: 7 of 7 web searches failed (")
    assert f"HTTP {status}" in notice
    assert {s["origin"] for s in result["sources"]} == {"wiki"}  # the wiki carried the round


async def test_unreachable_web_search_is_reported(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    closed = ProfilerContext(
        model="openai:failures",
        fast_model="openai:failures",
        tavily_base_url=f"http://127.0.0.1:{free_port()}",
    )
    result = await graph.ainvoke(
        {"name": "Kenshiro", "franchise": HOKUTO, "wiki_url": server.url}, context=closed
    )
    assert result["usage"]["failed_searches"] == 7
    assert "7 of 7 web searches failed (cannot reach 127.0.0.1" in result["notices"][0]


async def test_no_web_says_it_was_disabled_by_the_flag(
    server: LoopbackWebServer, tavily: FakeTavily, model: ScriptedChatModel
) -> None:
    result = await profile(server, web_search=False)
    assert result["notices"] == [NO_WEB_NOTICE]
    assert "disabled by --no-web" in NO_WEB_NOTICE
    assert tavily.queries == [] and result["usage"]["failed_searches"] == 0


async def test_pinned_wiki_without_the_page_falls_back_to_the_web(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await profile(server, name="Mamiya")
    assert result["wiki_page"] is None
    assert result["notices"] == [
        f"no wiki used (no page for 'Mamiya' on {server.url}); profiling from the web alone"
    ]
    assert {s["origin"] for s in result["sources"]} == {"web"}


async def test_pinned_wiki_without_the_page_and_no_web_is_an_error(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    with pytest.raises(WikiPageNotFound, match="no page for 'Mamiya'"):
        await profile(server, name="Mamiya", web_search=False)


async def test_an_article_url_as_wiki_uses_its_wiki_root(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    article = f"{server.url}/wiki/Raoh"
    result = await graph.ainvoke(
        {"name": "Kenshiro", "franchise": HOKUTO, "wiki_url": article},
        context=profiler_context(server, "failures"),
    )
    assert result["wiki_page"] == f"{server.url}/wiki/Kenshiro"
    assert f"--wiki {article} is an article; using its wiki {server.url}" in result["notices"]


async def test_one_source_per_page_across_searches_and_rounds(
    server: LoopbackWebServer, tavily: FakeTavily, model: ScriptedChatModel
) -> None:
    def one_page_many_passages(payload: dict[str, Any]) -> list[dict[str, Any]]:
        query = str(payload["query"])
        text = f"Kenshiro passage about {query}."
        return [{"url": "https://example.org/kenshiro-bio", "title": "Bio", "content": text}]

    tavily.results = one_page_many_passages
    model.responders["CoverageReview"] = scripted_model(score=0.2).responders["CoverageReview"]
    result = await profile(server, max_rounds=2)
    urls = [s["url"] for s in result["sources"]]
    assert len(urls) == len(set(urls))  # each page is one source however often it was found
    assert len(result["rounds"]) == 2 and not result["rounds"][1]["new_source_ids"]
    [bio] = [s for s in result["sources"] if s["url"] == "https://example.org/kenshiro-bio"]
    # Fourteen searches over two rounds found fourteen passages of the page: one source has them.
    assert bio["content"].count("Kenshiro passage about") == 14
    assert bio["id"] in result["rounds"][1]["source_ids"]


def test_assign_source_ids_merges_passages_of_one_page() -> None:
    known = [
        Source(id="S1", url="https://a.org/x", title="X", content="one", origin="web", round=1)
    ]
    found = [
        ("https://a.org/x#part", "two"),
        ("https://b.org/y", "three"),
        ("https://a.org/x", "two"),
        ("https://b.org/y/", "four"),
    ]
    passages = [
        Passage(url=url, title="T", content=text, origin="web", query="q", round=2)
        for url, text in found
    ]
    updates, ids, texts = assign_source_ids(known, passages, set())
    assert ids == ["S1", "S2"]
    assert texts == {"S1": ["two"], "S2": ["three", "four"]}
    merged = merge_sources(known, updates)
    assert [(s["id"], s["content"]) for s in merged] == [
        ("S1", "one\n\ntwo"),
        ("S2", "three\n\nfour"),
    ]


async def test_a_round_whose_summary_stays_invalid_degrades_and_the_profile_is_written(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    model.responders["EvidenceNotes"] = lambda messages: "I cannot produce JSON."
    result = await profile(server)
    usage, rounds = result["usage"], len(result["rounds"])
    assert rounds > 1  # no notes, no coverage: it searched on
    assert usage["rounds_degraded"] == rounds and usage["degraded"] == rounds
    # each round's summary retried with feedback, then degraded
    assert len(model.calls_for("EvidenceNotes")) == 3 * rounds
    assert result["profile"].startswith("I am Kenshiro")  # the rewrite still had the passages
    assert usage["dropped_facts"] == 0 and result["notices"] == []


async def test_a_draft_without_any_cited_fact_is_asked_again_then_flagged(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    uncited = {"profile": "I am Kenshiro.", "canon": "manga", "facts": []}
    model.responders["ProfileDraft"] = lambda messages: uncited
    result = await profile(server)
    drafts = model.calls_for("ProfileDraft")
    assert len(drafts) == 2 and CITE_REMINDER in prompt_text(drafts[1])
    assert all(facts == [] for facts in result["dimensions"].values())
    assert result["usage"]["dropped_facts"] == 0
    assert result["notices"] == [ZERO_FACTS_WARNING.format(count=0)]
    assert result["notices"][0].startswith("warning: the profile keeps no cited fact")


async def test_every_piece_of_dropped_model_output_is_counted(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    # A model that over-plans and repeats its follow-ups: the code drops each, and usage,
    # profile.md and the terminal say how many. (A note or fact citing no known id cannot
    # happen any more: the schema's enum holds the ids shown, at least one per fact.)
    model.responders["QueryPlan"] = lambda messages: {
        "queries": [
            {"dimension": d, "query": f"Kenshiro {d} {n}"} for d in DIMENSIONS for n in (1, 2)
        ]
    }
    model.responders["CoverageReview"] = lambda messages: {
        "dimensions": [
            {"dimension": d, "score": 0.1, "follow_up_queries": [f"Kenshiro {d} 1", "more"]}
            for d in DIMENSIONS
        ]
    }
    result = await profile(server, max_rounds=2)
    usage = result["usage"]
    assert usage["dropped_queries"] == 7  # the second query of each dimension (cap 1)
    # Round 1 re-proposes its own queries (already run); "Kenshiro more" is kept once.
    assert usage["dropped_follow_ups"] == 2 * 14 - 1
    assert usage["dropped_notes"] == 0 and usage["dropped_facts"] == 0
    markdown = render_markdown(profile_document(result))
    section = markdown.split("## Dropped model output\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == [
        f"- 7 {DROPPED_OUTPUT['dropped_queries']}",
        f"- 27 {DROPPED_OUTPUT['dropped_follow_ups']}",
    ]
