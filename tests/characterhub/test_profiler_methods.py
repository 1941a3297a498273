"""The two profiling methods and the citation checks, end to end on the loopback Hokuto world."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fake_web import FakeMediaWiki, FakeTavily, FakeWeb
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from profiler_world import (
    FALSE_MARK,
    PAPER_PROFILE,
    fake_web,
    profiler_context,
    scripted_model,
    serve_fake_web,
    shown_ids,
)

from personae.agents.characterhub.canon import OPEN_CANON, OPEN_RULE, canon_of_rule, decide_canon
from personae.agents.characterhub.deep_searcher import (
    FIRST_SEARCH_PROMPT,
    ITERATIVE_SEARCH_PROMPT,
    cited_ids,
)
from personae.agents.characterhub.profile_rewriter import PAPER_REWRITE_PROMPT
from personae.graphs.characterhub.profiler import graph
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.testing import ScriptedChatModel, override_models, prompt_text


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    with serve_fake_web(monkeypatch) as running:
        yield running


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    override_models(specs={"openai:methods-test": scripted})
    yield scripted


async def run(server: LoopbackWebServer, name: str = "Kenshiro", **changes: Any) -> dict[str, Any]:
    result: dict[str, Any] = await graph.ainvoke(
        {"name": name, "franchise": "Fist of the North Star", "wiki_url": server.url},
        context=profiler_context(server, "methods-test", **changes),
    )
    return result


async def test_paper_method_runs_r1_then_r2_then_table_8(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server, method="paper")
    assert result["method"] == "paper" and result["stop_reason"] == "paper_rounds"
    assert [r["round"] for r in result["rounds"]] == [1, 2]
    assert result["rounds"][1]["queries"] == ["Raoh Kenshiro brother"]  # R² searches a relative
    first, second = model.calls_for("ResearchDocument")
    assert FIRST_SEARCH_PROMPT.format(entity="Kenshiro") in prompt_text(first)
    assert ITERATIVE_SEARCH_PROMPT not in prompt_text(first)
    # R² sees R¹'s document and the iterative instruction, with all results.
    assert "# Kenshiro (R1)" in prompt_text(second)
    assert ITERATIVE_SEARCH_PROMPT in prompt_text(second)
    assert set(shown_ids(second)) == {s["id"] for s in result["sources"]}
    assert result["drinfo"].startswith("# Kenshiro (R2)")  # DRInfo is the R² document
    # Table 8 verbatim after the R² document, nothing else asked; its answer kept as written.
    assert model.calls_for("ProfileDraft") == []
    (rewrite,) = model.calls_for("text")
    assert [m.content for m in rewrite] == [
        result["drinfo"],
        PAPER_REWRITE_PROMPT.format(entity="Kenshiro"),
    ]
    assert result["profile"] == PAPER_PROFILE
    assert result["prose_check"] is None and result["usage"]["facts_checked"] == 0
    assert model.calls_for("ClaimChecks") == [] and model.calls_for("ProseCheck") == []
    assert model.calls_for("QueryPlan") == [] and model.calls_for("CoverageReview") == []
    assert result["canon"] == ""  # no canon rule: the paper's prompts have none
    assert all("Canon:" not in prompt_text(m) for _, m in model.calls)
    assert set(cited_ids(result["drinfo"])) <= {s["id"] for s in result["sources"]}
    assert result["models"]["search"] == {
        "model": "openai:methods-test",
        "temperature": 1.0,
        "top_p": 0.95,
        "top_k": 64,
        "top_k_sent": False,
    }
    assert result["models"]["rewrite"]["temperature"] == 0.85
    assert result["models"]["rewrite"]["top_k"] == 50


# CharacterHub, Appendix F, Table 7, as the paper prints it ({{entity}} filled, quotes straight).
TABLE_7_FIRST = (
    "Please help me collect all relevant knowledge about Kenshiro and integrate it into a detailed"
    " encyclopedic document. Use markdown format. Be truthful, comprehensive, and thorough,"
    " without omitting important information. You must verify the authenticity of information"
    " and the credibility of sources. Do not include or fabricate false information.\n\nYou"
    " should include the character's personality (very important), background, physical"
    " description, core motivations, notable attributes, relationships, key experiences, major"
    " plot involvement and key decisions or actions, character arc or development throughout the"
    " story, if there is any information about these aspects."
)
TABLE_7_ITERATIVE = (
    "Please continue searching to verify and expand on the knowledge you have already collected,"
    " such as searching for closely related people, events, objects, and other entities."
)
CITING = (
    "Cite the ids of the results a statement comes from, like [S3] or\n[S2, S5]; cite only the"
    " ids shown."
)
"""The one addition the README states: citing ids, so DRInfo points into ``sources``."""


async def test_the_paper_method_s_search_rounds_send_table_7_and_no_rule_of_ours(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    """Besides the tool's cues (results, write now, cite ids) the agent reads Table 7 alone."""
    await run(server, method="paper")
    first, second = model.calls_for("ResearchDocument")
    for call, table, cue in (
        (first, [TABLE_7_FIRST], "Write the document now. "),
        (second, [TABLE_7_FIRST, TABLE_7_ITERATIVE], "Write the whole document now. "),
    ):
        humans = [str(m.content) for m in call if isinstance(m, HumanMessage)]
        assert humans[:-1] == table
        head, results = "## Search results\n[S", humans[-1]
        assert results.startswith(head) and results.endswith("\n\n" + cue + CITING)
        for rule in ("results only", "Leave out", "Re-check", "support"):
            assert rule not in str(call[0].content) + humans[-1].split("\n\nWrite ")[-1]
    (r1,) = [str(m.content) for m in second if isinstance(m, AIMessage)]
    assert r1.startswith("# Kenshiro (R1)")


async def test_our_grounding_rules_join_the_search_rounds_only_with_check_citations(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    await run(server, method="paper", check_citations=True)
    first, second = model.calls_for("ResearchDocument")
    assert "from these search results only" in str(first[-1].content)
    assert "Re-check every statement of your previous document" in str(second[-1].content)
    assert str(second[-1].content).endswith("not only the additions.")


async def test_the_paper_method_keeps_the_table_8_output_unedited(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    """A sentence no source states stays: the paper's method checks nothing after Table 8."""
    model.responders["text"] = lambda m: f"{PAPER_PROFILE} I am the {FALSE_MARK}."
    result = await run(server, method="paper")
    assert result["profile"] == f"{PAPER_PROFILE} I am the {FALSE_MARK}."
    assert result["usage"].get("sentences_unsupported", 0) == 0


async def test_the_paper_agent_s_queries_beyond_its_budget_are_counted(
    server: LoopbackWebServer, model: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ProfilerContext, "paper_queries", 2)  # the paper's 8, a constant
    model.responders["SearchQueries"] = lambda messages: {
        "queries": ["Kenshiro", "kenshiro ", "Kenshiro", "", "Kenshiro scars", "Raoh"]
    }
    result = await run(server, method="paper", max_rounds=1)
    assert result["rounds"][0]["queries"] == ["Kenshiro", "Kenshiro scars"]
    assert result["usage"]["dropped_queries"] == 4  # a repeat, an empty one, two beyond 2


async def test_paper_ablation_without_iterative_search_stops_after_r1(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server, method="paper", max_rounds=1)
    assert [r["round"] for r in result["rounds"]] == [1]
    assert result["drinfo"].startswith("# Kenshiro (R1)")


async def test_planned_method_keeps_its_notes_as_drinfo(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server)
    assert result["method"] == "planned"
    assert result["drinfo"].startswith("# Kenshiro\n\n## Identity\n- Kenshiro identity fact. [S")
    assert model.calls_for("ResearchDocument") == []


def planting(model: ScriptedChatModel) -> ScriptedChatModel:
    """The model plants a false fact with a real id in the notes, the facts and the prose."""
    notes, draft = model.responders["EvidenceNotes"], model.responders["ProfileDraft"]

    def false_notes(messages: list[BaseMessage]) -> dict[str, Any]:
        answer = notes(messages)
        ids = shown_ids(messages)[:1]
        lie = {"dimension": "identity", "text": f"Kenshiro is the {FALSE_MARK}.", "source_ids": ids}
        answer["facts"].append(lie)
        return dict(answer)

    def false_draft(messages: list[BaseMessage]) -> dict[str, Any]:
        answer = draft(messages)
        ids = shown_ids(messages)[:1]
        answer["profile"] += f" I am the {FALSE_MARK}.\n\nI protect the weak."
        lie = {"dimension": "identity", "text": f"I am the {FALSE_MARK}.", "source_ids": ids}
        answer["facts"].append(lie)
        return dict(answer)

    model.responders["EvidenceNotes"] = false_notes
    model.responders["ProfileDraft"] = false_draft
    return model


@pytest.mark.parametrize("method", ["planned", "paper"])
async def test_false_facts_with_real_ids_are_dropped_and_counted(
    server: LoopbackWebServer, model: ScriptedChatModel, method: str
) -> None:
    """Our checks: always on for planned, opted in for the paper method."""
    planting(model)
    result = await run(server, method=method, check_citations=True)
    facts = [f["text"] for facts in result["dimensions"].values() for f in facts]
    assert facts and not any(FALSE_MARK in f for f in facts)
    assert FALSE_MARK not in result["profile"]
    assert result["profile"] == "I am Kenshiro, successor of Hokuto Shinken.\n\nI protect the weak."
    assert result["prose_check"]["dropped"] == [f"I am the {FALSE_MARK}."]
    assert result["usage"]["sentences_unsupported"] == 1
    dropped = [f["text"] for f in result["unsupported_facts"]]
    assert dropped == [f"I am the {FALSE_MARK}."]
    if method == "planned":  # the notes were checked too: the lie never reached DRInfo
        # One count per meaning: the round's lying note, then the profile's lying fact.
        usage = result["usage"]
        assert (usage["notes_unsupported"], usage["facts_unsupported"]) == (1, 1)
        assert FALSE_MARK not in result["drinfo"]
    checks = prompt_text(model.calls_for("ClaimChecks")[-1])
    assert "Cited text:\n[S" in checks  # the checker reads the cited passage


async def test_a_fact_quoting_its_passage_verbatim_costs_no_check_call(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    draft = model.responders["ProfileDraft"]

    def verbatim(messages: list[BaseMessage]) -> dict[str, Any]:
        answer = dict(draft(messages))
        text = "Kenshiro wanders the post-apocalyptic wasteland protecting villagers."
        found = re.search(r"\[(S\d+)\] Kenshiro biography", prompt_text(messages))
        assert found is not None, "the rewriter did not see the web passage"
        web_id = found.group(1)
        answer["facts"] = [{"dimension": "experience", "text": text, "source_ids": [web_id]}]
        return answer

    model.responders["ProfileDraft"] = verbatim
    model.responders["EvidenceNotes"] = lambda _m: {"facts": []}
    result = await run(server, max_rounds=1)
    assert result["usage"]["facts_checked"] == 1 and result["usage"]["facts_unsupported"] == 0
    assert model.calls_for("ClaimChecks") == []


def test_canon_is_the_named_version_or_none() -> None:
    assert "Carnival Phantasm" in decide_canon("Illyasviel von Einzbern (Carnival Phantasm)", None)
    assert "Canon: Nyoron! Churuya-san." in decide_canon("Haruhi Suzumiya", "Nyoron! Churuya-san")
    assert decide_canon("Haruhi Suzumiya", None) == OPEN_RULE
    assert "keep each account apart and label which version" in OPEN_RULE


async def test_canon_rule_reaches_every_prompt_of_the_run(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    await run(server, method="paper", canon_rule=True, check_citations=True)  # opted in
    rule = decide_canon("Kenshiro", "Fist of the North Star")
    for schema in ("SearchQueries", "ResearchDocument", "ProfileDraft"):
        assert model.calls_for(schema), schema
        assert all(rule in prompt_text(m) for m in model.calls_for(schema)), schema
    model.calls.clear()
    await run(server)  # planned: on by default
    for schema in ("EvidenceNotes", "ProfileDraft"):
        assert all(rule in prompt_text(m) for m in model.calls_for(schema)), schema


async def test_discovery_finds_the_wiki_through_web_search_when_the_franchise_does_not_slug(
    monkeypatch: pytest.MonkeyPatch, model: ScriptedChatModel
) -> None:
    """hokuto.fandom.com is not a slug of "Fist of the North Star": web search names it."""
    web, wiki, _ = fake_web()

    def results(payload: dict[str, Any]) -> list[dict[str, Any]]:
        if "wiki fandom" in str(payload["query"]):
            return [
                {"url": "https://hokuto.fandom.com/wiki/Kenshiro", "title": "t", "content": "c"}
            ]
        return []

    tavily = FakeTavily(results, api_key="tvly-test")
    routes = FakeWeb(tavily=tavily, wikis={"/hokuto": wiki})
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    with LoopbackWebServer(routes.route) as server:
        result = await graph.ainvoke(
            {"name": "Kenshiro", "franchise": "Fist of the North Star", "wiki_url": None},
            context=profiler_context(
                server, "methods-test", fandom_template=server.url + "/{slug}", max_rounds=1
            ),
        )
    assert result["wiki_page"] == f"{server.url}/hokuto/wiki/Kenshiro"
    assert tavily.queries[0]["query"] == "Fist of the North Star wiki fandom"


async def test_without_web_search_candidate_wikis_are_asked_for_the_character(
    monkeypatch: pytest.MonkeyPatch, model: ScriptedChatModel
) -> None:
    """The full-name slug exists but does not know Kenshiro; the short one ("fist") does."""
    _, hokuto, _ = fake_web()
    other = FakeMediaWiki({"Main Page": "<p>A wiki about something else.</p>"})
    routes = FakeWeb(wikis={"/fistofthenorthstar": other, "/fist": hokuto})
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with LoopbackWebServer(routes.route) as server:
        result = await graph.ainvoke(
            {"name": "Kenshiro", "franchise": "Fist of the North Star", "wiki_url": None},
            context=profiler_context(
                server, "methods-test", fandom_template=server.url + "/{slug}", max_rounds=1
            ),
        )
    assert result["wiki_page"] == f"{server.url}/fist/wiki/Kenshiro"


def test_the_canon_a_rule_decided_reads_as_a_canon_not_an_instruction() -> None:
    named = decide_canon("Illyasviel von Einzbern (Carnival Phantasm)", None)
    assert canon_of_rule(named) == "Carnival Phantasm"
    assert canon_of_rule(decide_canon("Kenshiro", "Fist of the North Star")) == (
        "Fist of the North Star"
    )
    assert canon_of_rule(OPEN_RULE) == OPEN_CANON and canon_of_rule("") == ""
    assert canon_of_rule("Follow the manga. ") == "Follow the manga."  # a rule of its own
