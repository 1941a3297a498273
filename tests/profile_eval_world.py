"""A small world for the profile evaluation tests: reference page, profiles and a scripted LLM.

The reference is ``tests/evals/fixtures/toki_small.html`` (five chunks, one knowledge point each
per dimension below). The scripted extractor quotes each chunk with varied case and spacing
(so the code's quote check must normalise) and adds one invented point per chunk (its quote is
not in the chunk, so the code must drop it). The scripted judge answers from a verdict table per
profile, so every score in the tests is computed by hand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.agents.query_planner import DIMENSIONS
from personae.memory.profile_store import write_profile
from personae.testing import ScriptedChatModel

FIXTURE = Path(__file__).parent / "evals" / "fixtures" / "toki_small.html"
REFERENCE_URL = "https://hokuto.fandom.com/wiki/Toki"

TYPE_OF_HEADING = {
    "Introduction": "identity",
    "Appearance": "appearance",
    "History > Nuclear War": "experience",
    "Personality": "Personality",  # capitalised on purpose: the schema must normalise it
}
TYPE_OF_LABEL = {"Fighting Style": "ability", "Family": "relationship"}

ALLOWED_PROFILE = "I am Toki, second of the four Hokuto brothers, a master of Hokuto Shinken."
EXCLUDED_PROFILE = "I am Toki, a wandering healer."

ALLOWED_VERDICTS = {
    "ability": "supported",
    "relationship": "supported",
    "identity": "partially_supported",
    "appearance": "irrelevant",
    "experience": "contradicted",
    "personality": "supported",
}
"""N=6: Sup 3, Par 1, Irr 1, Con 1 → support 3.5/6, irrelevant 1/6, contradiction 1/6."""
EXCLUDED_VERDICTS = {
    "ability": "irrelevant",
    "relationship": "irrelevant",
    "identity": "Supported",  # a spelling the judge schema must map
    "appearance": "irrelevant",
    "experience": "irrelevant",
    "personality": "partially supported",
}
"""N=6: Sup 1, Par 1, Irr 4 → support 1.5/6, irrelevant 4/6, contradiction 0."""

_CHUNK = re.compile(
    r"## Reference text \[(C\d+)\] \((.*?)\)\n(.*)\n\nList the knowledge points", re.DOTALL
)
_POINT = re.compile(r"## Knowledge point \((\w+)\)\n(.*?)\n", re.DOTALL)


def first_prompt(messages: list[BaseMessage]) -> str:
    """The task prompt (first human message); retries append feedback after it."""
    return str(next(m.content for m in messages if m.type == "human"))


def extract(messages: list[BaseMessage]) -> dict[str, Any]:
    """Scripted extractor: one point per line or sentence, plus one invented point."""
    match = _CHUNK.search(first_prompt(messages))
    assert match is not None, "the extraction prompt lost its chunk header"
    _, heading, text = match.groups()
    points = []
    if heading == "Infobox":
        for line in text.splitlines():
            label, _, value = line.partition(": ")
            points.append(
                {
                    "statement": f"Toki's {label.lower()} is {value}.",
                    "evidence": line.upper(),
                    "type": TYPE_OF_LABEL[label],
                }
            )
    else:
        sentence = text.strip()
        points.append(
            {
                "statement": sentence,
                "evidence": sentence.replace(" ", "  \n", 1).lower(),
                "type": TYPE_OF_HEADING[heading],
            }
        )
    points.append(
        {"statement": "Toki can fly.", "evidence": "Toki flies over the sea.", "type": "ability"}
    )
    return {"points": points}


def judge(tables: Mapping[str, Mapping[str, str]]) -> Any:
    """Scripted judge: the verdict for the point's dimension in the table of the profile shown."""

    def answer(messages: list[BaseMessage]) -> dict[str, Any]:
        prompt = first_prompt(messages)
        match = _POINT.search(prompt)
        assert match is not None, "the judge prompt lost its knowledge point"
        dimension = match.group(1)
        profile = prompt.split("## Profile\n", 1)[1].split("\n\n## Knowledge point", 1)[0]
        verdicts = tables[profile]
        return {"reason": f"the profile says: {profile[:30]}", "verdict": verdicts[dimension]}

    return answer


def scripted_model(
    tables: Mapping[str, Mapping[str, str]] | None = None, latency: float = 0.0
) -> ScriptedChatModel:
    """A model answering both the extractor and the judge."""
    chosen = tables or {ALLOWED_PROFILE: ALLOWED_VERDICTS, EXCLUDED_PROFILE: EXCLUDED_VERDICTS}
    return ScriptedChatModel(
        responders={"ExtractedKnowledge": extract, "SupportJudgment": judge(chosen)},
        latency=latency,
    )


def profiler_result(profile: str, urls: list[str]) -> dict[str, Any]:
    """A finished profiler output with one source per URL (content included)."""
    sources = [
        {
            "id": f"S{number}",
            "url": url,
            "title": "Toki",
            "origin": "wiki" if "/wiki/" in url else "web",
            "content": "Toki is the second of the four Hokuto brothers. " * 20,
            "round": 1,
        }
        for number, url in enumerate(urls, start=1)
    ]
    return {
        "name": "Toki",
        "franchise": "Fist of the North Star",
        "profile": profile,
        "canon": "manga",
        "conflicts": [],
        "dimensions": {"identity": [{"text": profile, "source_ids": ["S1"]}]},
        "sources": sources,
        "rounds": [],
        "reflections": [],
        "usage": {"llm_calls": 3},
        "stop_reason": "coverage_reached",
        "notices": [],
        "wiki_page": urls[0] if urls else None,
    }


def write_profiles(
    root: Path, reference_url: str = REFERENCE_URL, name: str = "Toki"
) -> tuple[Path, Path]:
    """The two profiles of the comparison: reference allowed (leaks) and excluded."""
    allowed = write_profile(
        root / "allowed",
        profiler_result(ALLOWED_PROFILE, [f"{reference_url}#History", "https://example.org/toki"]),
        name=name,
    ).profile_json
    excluded = write_profile(
        root / "excluded",
        profiler_result(EXCLUDED_PROFILE, ["https://example.org/toki"]),
        name=name,
    ).profile_json
    return allowed, excluded


def sentence_extractor(messages: list[BaseMessage]) -> dict[str, Any]:
    """A generic extractor: every sentence of the chunk is a point, quoted exactly, typed by
    the dimension named in its heading (``other`` when none is)."""
    match = _CHUNK.search(first_prompt(messages))
    assert match is not None, "the extraction prompt lost its chunk header"
    _, heading, text = match.groups()
    named = [d for d in DIMENSIONS if d in heading.casefold()]
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n", text) if s.strip()]
    return {
        "points": [
            {"statement": s, "evidence": s, "type": named[0] if named else "other"}
            for s in sentences
        ]
    }


def keyword_judge(keyword: str) -> Any:
    """A generic judge: supported when the point and the profile both name ``keyword``."""

    def answer(messages: list[BaseMessage]) -> dict[str, Any]:
        prompt = first_prompt(messages)
        profile, point = prompt.split("## Knowledge point", 1)
        found = keyword in profile and keyword in point
        return {"reason": "keyword", "verdict": "supported" if found else "irrelevant"}

    return answer
