"""A fake Hokuto world for profiler tests: a loopback wiki and Tavily, and a scripted LLM.

Only the remote web (FakeMediaWiki/FakeTavily over a real loopback HTTP server) and the LLM
(ScriptedChatModel) are fake; the Tavily, MediaWiki and HTTP clients and the graph are real.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fake_web import FakeMediaWiki, FakeTavily, FakeWeb
from langchain_core.messages import BaseMessage

from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.testing import ScriptedChatModel, prompt_text

KENSHIRO = """<p><b>Kenshiro</b> is the 64th successor of Hokuto Shinken and the main character of
<i>Fist of the North Star</i>.</p>
<h2>Appearance</h2><p>Kenshiro has seven scars on his chest shaped like the Big Dipper.</p>
<h2>Personality</h2><p>Kenshiro is stoic and quiet but kind to the weak.</p>
<h2>Abilities</h2><p>Kenshiro masters Hokuto Shinken, striking the pressure points of enemies.</p>
<h2>Relationships</h2><p>Raoh is Kenshiro's eldest adoptive brother and rival; Yuria is his love.</p>
<h2>History</h2><p>Kenshiro was defeated by Shin, who took Yuria and carved the scars.</p>"""

ZORO_DISAMBIGUATION = """<p><b>Zoro</b> may refer to:</p><ul>
<li><a href="/wiki/Zoro_(Hokuto)">Zoro (Hokuto)</a>, a thug from Fist of the North Star</li>
<li><a href="/wiki/Roronoa_Zoro">Roronoa Zoro</a>, a swordsman from One Piece</li></ul>"""


def hokuto_wiki() -> FakeMediaWiki:
    """A small Hokuto wiki with an ambiguous name."""
    return FakeMediaWiki(
        {
            "Kenshiro": KENSHIRO,
            "Raoh": "<p>Raoh is the eldest brother of Kenshiro and the King of Fist.</p>",
            "Zoro": ZORO_DISAMBIGUATION,
            "Zoro (Hokuto)": "<p>Zoro is a thug of Fist of the North Star.</p>",
            "Roronoa Zoro": "<p>Roronoa Zoro is a swordsman of One Piece.</p>",
        },
        sitename="Hokuto Wiki",
    )


WEB_PAGES = [
    {
        "url": "https://example.org/kenshiro-bio",
        "title": "Kenshiro biography",
        "content": "Kenshiro wanders the post-apocalyptic wasteland protecting villagers.",
    },
    {
        "url": "https://leak.example.org/kenshiro-answers",
        "title": "Leaked evaluation page",
        "content": "Kenshiro says: you are already dead.",
    },
]


def web_results(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Every Kenshiro query finds the same two web pages."""
    return list(WEB_PAGES) if "kenshiro" in str(payload.get("query", "")).casefold() else []


def fake_web(tavily: bool = True) -> tuple[FakeWeb, FakeMediaWiki, FakeTavily]:
    """The routes of the whole fake web."""
    wiki = hokuto_wiki()
    search = FakeTavily(web_results, api_key="tvly-test")
    return FakeWeb(tavily=search if tavily else None, wiki=wiki), wiki, search


@contextmanager
def serve_fake_web(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    """The whole fake web on a loopback server, with a Tavily key so web search is on.

    ``TAVILY_BASE_URL`` points at it too, so a run that reads its settings from the
    environment (the CLI) searches here: without it the CLI's searches went to the real
    Tavily, were refused offline and retried for ten seconds before the run went on.
    """
    web, _, _ = fake_web()
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    with LoopbackWebServer(web.route) as running:
        monkeypatch.setenv("TAVILY_BASE_URL", running.url)
        yield running


def profiler_context(server: LoopbackWebServer, model: str, **changes: Any) -> ProfilerContext:
    """Run settings with the model injected as ``openai:<model>`` in both roles and the loopback Tavily."""
    return ProfilerContext(
        model=f"openai:{model}",
        fast_model=f"openai:{model}",
        tavily_base_url=server.url,
        **changes,
    )


_ID = re.compile(r"\[(S\d+)\]")


def shown_ids(messages: list[BaseMessage]) -> list[str]:
    """Source ids the prompt showed, in order."""
    return list(dict.fromkeys(_ID.findall(prompt_text(messages))))


def plan(messages: list[BaseMessage]) -> dict[str, Any]:
    """A plan that forgets the ``other`` dimension (the code must add it)."""
    return {
        "queries": [{"dimension": d, "query": f"Kenshiro {d}"} for d in DIMENSIONS if d != "other"]
    }


def notes(messages: list[BaseMessage]) -> dict[str, Any]:
    """One fact per dimension citing the first id shown."""
    ids = shown_ids(messages)
    return {
        "facts": [
            {"dimension": d, "text": f"Kenshiro {d} fact.", "source_ids": ids[:1]}
            for d in DIMENSIONS
        ]
    }


def coverage(score: float, follow_up: bool = True) -> Callable[[list[BaseMessage]], Any]:
    """A reflector giving every dimension ``score`` and one new follow-up per call."""
    counter = {"n": 0}

    def respond(messages: list[BaseMessage]) -> dict[str, Any]:
        counter["n"] += 1
        return {
            "dimensions": [
                {
                    "dimension": d,
                    "score": score,
                    "follow_up_queries": [f"Kenshiro {d} more {counter['n']}"] if follow_up else [],
                }
                for d in DIMENSIONS
            ]
        }

    return respond


def draft(messages: list[BaseMessage]) -> dict[str, Any]:
    """A first-person draft citing real ids."""
    ids = shown_ids(messages)
    return {
        "profile": "I am Kenshiro, successor of Hokuto Shinken.",
        "canon": "original manga",
        "facts": [
            {"dimension": "identity", "text": "I am the 64th successor.", "source_ids": ids[:1]},
            {"dimension": "ability", "text": "I strike pressure points.", "source_ids": ids[:2]},
        ],
        "conflicts": ["The anime changes Shin's motive; kept the manga."],
    }


_CLAIM = re.compile(r"## Claim (\d+): ")
_SENTENCE_LINE = re.compile(r"^(\d+)\. ", re.MULTILINE)


def claim_checks(messages: list[BaseMessage]) -> dict[str, Any]:
    """Citation checker: every claim supported unless it says it is false."""
    prompt = prompt_text(messages)
    checks = {}
    for match in _CLAIM.finditer(prompt):
        claim = prompt[match.end() :].split("\n", 1)[0]
        checks[match.group(1)] = "unsupported" if FALSE_MARK in claim else "supported"
    return checks


def prose_checks(messages: list[BaseMessage]) -> dict[str, Any]:
    """Prose checker: every sentence supported unless it says it is false."""
    prompt = prompt_text(messages)
    sentences = prompt.split("## Sentences of the profile\n", 1)[1]
    answer = {}
    for line in sentences.splitlines():
        match = _SENTENCE_LINE.match(line)
        if match:
            verdict = "unsupported" if FALSE_MARK in line else "supported"
            answer[match.group(1)] = {"verdict": verdict}
    return answer


FALSE_MARK = "King of Mars"
"""What the scripted checkers treat as unsupported (a planted false fact)."""


def paper_queries(messages: list[BaseMessage]) -> dict[str, Any]:
    """The paper agent: R¹ searches the character, R² a related person."""
    second = "continue searching to verify" in prompt_text(messages)
    return {"queries": ["Raoh Kenshiro brother"] if second else ["Kenshiro", "Kenshiro history"]}


def paper_document(messages: list[BaseMessage]) -> dict[str, Any]:
    """The paper agent's document: one line per result shown, citing its id."""
    ids = shown_ids(messages)
    second = "continue searching to verify" in prompt_text(messages)
    title = "R2" if second else "R1"
    return {"document": f"# Kenshiro ({title})\n" + "\n".join(f"- Fact [{i}]" for i in ids)}


def scripted_model(score: float = 0.9, follow_up: bool = True) -> ScriptedChatModel:
    """A model answering every profiler role of both methods."""
    return ScriptedChatModel(
        responders={
            "QueryPlan": plan,
            "EvidenceNotes": notes,
            "CoverageReview": coverage(score, follow_up),
            "ProfileDraft": draft,
            "ClaimChecks": claim_checks,
            "ProseCheck": prose_checks,
            "SearchQueries": paper_queries,
            "ResearchDocument": paper_document,
            "text": paper_profile,
        }
    )


PAPER_PROFILE = "I am Kenshiro, successor of Hokuto Shinken. [S1]\n\nI protect the weak."
"""The Table 8 rewrite's answer (plain text: the paper's method asks for nothing else)."""


def paper_profile(messages: list[BaseMessage]) -> str:
    """The paper method's Table 8 answer."""
    return PAPER_PROFILE
