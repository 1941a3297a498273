"""A small world for the profile evaluation tests: reference page, profiles and a scripted LLM.

The reference is ``tests/characterhub/fixtures/toki_small.html``: six knowledge points, one per
dimension except ``other``. The scripted extractor reads the Table 9 prompt's input JSON, quotes
each infobox row and section sentence with varied case and spacing (so the code's quote check
must normalise) and adds one invented point (its quote is not in the input, so the code must
drop it). The scripted judge reads the Table 10 prompt's knowledge list and text and answers
from a verdict table per text, so every score in the tests is computed by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.memory.characterhub.profile_store import write_profile
from personae.testing import ScriptedChatModel

FIXTURE = Path(__file__).parent / "characterhub" / "fixtures" / "toki_small.html"
REFERENCE_URL = "https://hokuto.fandom.com/wiki/Toki"

TYPE_OF_HEADING = {
    "Introduction": "identity",
    "Appearance": "appearance",
    "History > Nuclear War": "experience",
    "Personality": "Personality",  # capitalised on purpose: the schema must normalise it
}
TYPE_OF_LABEL = {"Fighting Style": "ability", "Family": "relationship"}
KEYWORD_TYPES = {
    "fighting style": "ability",
    "family": "relationship",
    "four hokuto brothers": "identity",
    "white hair": "appearance",
    "nuclear": "experience",
    "gentle": "personality",
    "fly": "ability",  # the invented point, judged when the evidence filter is off
}
"""How the scripted judge tells a reference point's dimension (it never sees the type)."""

ALLOWED_PROFILE = "I am Toki, second of the four Hokuto brothers, a master of Hokuto Shinken."
EXCLUDED_PROFILE = "I am Toki, a wandering healer."
ALLOWED_DRINFO = "# Toki\nToki is the second Hokuto brother. He has long white hair."
EXCLUDED_DRINFO = "# Toki\nToki heals the sick in the wasteland."

ALLOWED_VERDICTS = {
    "ability": "supported",
    "relationship": "supported",
    "identity": "partially supported",
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
    "personality": "partially_supported",
}
"""N=6: Sup 1, Par 1, Irr 4 → support 1.5/6, irrelevant 4/6, contradiction 0."""
DRINFO_VERDICTS = {
    "ability": "irrelevant",
    "relationship": "irrelevant",
    "identity": "supported",
    "appearance": "supported",
    "experience": "irrelevant",
    "personality": "irrelevant",
}
"""N=6: Sup 2, Irr 4 → support 2/6 (both DRInfo texts)."""

_INPUT = re.compile(r"Input Data:\n```\n(.*)\n```\Z", re.DOTALL)
_JUDGE = re.compile(r"`knowledge_list`: (\[.*?\])\n\n`text`: (.*)\Z", re.DOTALL)


def first_prompt(messages: list[BaseMessage]) -> str:
    """The task prompt (first human message); retries append feedback after it."""
    return str(next(m.content for m in messages if m.type == "human"))


def extractor_input(messages: list[BaseMessage]) -> dict[str, Any]:
    """The JSON a Table 9 prompt carries."""
    match = _INPUT.search(first_prompt(messages))
    assert match is not None, "the extraction prompt lost its input data"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def judge_input(messages: list[BaseMessage]) -> tuple[list[dict[str, Any]], str]:
    """The knowledge list and text a Table 10 prompt carries."""
    match = _JUDGE.search(first_prompt(messages))
    assert match is not None, "the judge prompt lost its knowledge list or text"
    return json.loads(match.group(1)), json.loads(match.group(2))


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\n", text) if s.strip() and not s.startswith("#")]


def extract(messages: list[BaseMessage]) -> dict[str, Any]:
    """Scripted Table 9 extractor: one point per infobox row and sentence, plus an invented one."""
    data = extractor_input(messages)
    points = []
    for label, value in data["infobox"].items():
        points.append(
            {
                "knowledge": f"{data['title']}'s {label.lower()} is {value}.",
                "evidence": f"{label}: {value}".upper(),
                "type": TYPE_OF_LABEL[label],
            }
        )
    for heading, text in data["content"].items():
        for sentence in sentences(text):
            points.append(
                {
                    "knowledge": sentence,
                    "evidence": sentence.replace(" ", "  \n", 1).lower(),
                    "type": TYPE_OF_HEADING.get(heading, "other"),
                }
            )
    points.append({"knowledge": "Toki can fly.", "evidence": "Toki flies.", "type": "ability"})
    return {"entity": data["title"], "knowledge_points": points}


def dimension_of(statement: str) -> str:
    """The dimension of a reference point, told from its wording."""
    lowered = statement.casefold()
    return next(t for k, t in KEYWORD_TYPES.items() if k in lowered)


def judge(tables: Mapping[str, Mapping[str, str]]) -> Any:
    """Scripted Table 10 judge: each item's verdict from the table of the text shown."""

    def answer(messages: list[BaseMessage]) -> dict[str, Any]:
        items, text = judge_input(messages)
        verdicts = tables[text]
        return {
            str(item["id"]): {
                "evaluation": verdicts[dimension_of(item["knowledge"])],
                "evidence": f"the text says: {text[:30]}",
            }
            for item in items
        }

    return answer


DEFAULT_TABLES = {
    ALLOWED_PROFILE: ALLOWED_VERDICTS,
    EXCLUDED_PROFILE: EXCLUDED_VERDICTS,
    ALLOWED_DRINFO: DRINFO_VERDICTS,
    EXCLUDED_DRINFO: DRINFO_VERDICTS,
}


def scripted_model(
    tables: Mapping[str, Mapping[str, str]] | None = None, latency: float = 0.0
) -> ScriptedChatModel:
    """A model answering both the extractor and the judge."""
    return ScriptedChatModel(
        responders={
            "ExtractedKnowledge": extract,
            "AlignmentList": judge(tables or DEFAULT_TABLES),
        },
        latency=latency,
    )


def profiler_result(
    profile: str, urls: list[str], drinfo: str = "", method: str = "planned", name: str = "Toki"
) -> dict[str, Any]:
    """A finished profiler output with one source per URL (content included)."""
    sources = [
        {
            "id": f"S{number}",
            "url": url,
            "title": name,
            "origin": "wiki" if "/wiki/" in url else "web",
            "content": f"{name} is the second of the four Hokuto brothers. " * 20,
            "round": 1,
        }
        for number, url in enumerate(urls, start=1)
    ]
    return {
        "name": name,
        "franchise": "Fist of the North Star",
        "method": method,
        "profile": profile,
        "drinfo": drinfo,
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
        profiler_result(
            ALLOWED_PROFILE,
            [f"{reference_url}#History", "https://example.org/toki"],
            drinfo=ALLOWED_DRINFO,
        ),
        name=name,
    ).profile_json
    excluded = write_profile(
        root / "excluded",
        profiler_result(EXCLUDED_PROFILE, ["https://example.org/toki"], drinfo=EXCLUDED_DRINFO),
        name=name,
    ).profile_json
    return allowed, excluded


def sentence_extractor(messages: list[BaseMessage]) -> dict[str, Any]:
    """A generic extractor: every sentence of the input is a point, quoted exactly, typed by
    the dimension named in its heading (``other`` when none is)."""
    data = extractor_input(messages)
    points = []
    for label, value in data["infobox"].items():
        points.append({"knowledge": f"{label}: {value}", "evidence": value, "type": "identity"})
    for heading, text in data["content"].items():
        named = [d for d in DIMENSIONS if d in heading.casefold()]
        points += [
            {"knowledge": s, "evidence": s, "type": named[0] if named else "other"}
            for s in sentences(text)
        ]
    return {"entity": data["title"], "knowledge_points": points}


def keyword_judge(keyword: str) -> Any:
    """A generic judge: supported when the item and the text both name ``keyword``."""

    def answer(messages: list[BaseMessage]) -> dict[str, Any]:
        items, text = judge_input(messages)
        return {
            str(item["id"]): {
                "evaluation": "supported"
                if keyword in text and keyword in item["knowledge"]
                else "irrelevant"
            }
            for item in items
        }

    return answer
