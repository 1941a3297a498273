"""Every graph of langgraph.json with the run input and context the README shows.

Shared by the server test (runs through `langgraph dev`'s HTTP API) and the in-process test
under the server's blocking-call guard. Paths in contexts are relative, as a user in Studio
writes them: they resolve against the working directory (the server's, or the test's).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from arcane_world import ProbeScript, arc_responders, prepared_novel, write_event_stream
from bookmarks_world import scripted_model as bookmarks_model
from bookmarks_world import write_storyline
from langchain_core.messages import BaseMessage
from profiler_world import scripted_model as profiler_model

from personae.memory.amadeus.persona_chunks import split_persona
from personae.memory.amadeus.persona_doc import parse_markdown
from personae.memory.amadeus.persona_store import PersonaIndex, open_client
from personae.memory.embeddings import HashingTextEmbedding
from personae.testing import ScriptedChatModel, prompt_text

ROOT = Path(__file__).resolve().parents[1]
GRAPHS: dict[str, str] = json.loads((ROOT / "langgraph.json").read_text())["graphs"]


def graph_module(graph: str) -> str:
    """The import name of a langgraph.json graph (``./graphs/arcane/roleplay.py:graph``)."""
    parts = Path(GRAPHS[graph].split(":")[0]).with_suffix("").parts
    return ".".join(("personae", *parts))


ACTING = ("bookmarks", "vanilla", "ricl", "eta")
ARCANE = ("arcane_roleplay", "arc_build", "probe_build", "arcane_eval")
DATA_DIR = "data"
ARCANE_PROBE = "the_river_ada_final_intra_01_iw_a1"
_EVAL_RUNS = itertools.count(1)
STORY = "club.jsonl"
PERSONA_DIR = "persona"
PERSONA = "# Megumin\n\n" + "\n\n".join(
    f"## Topic {i}\n\nMegumin fact {i} about explosion magic and the crimson demons."
    for i in range(6)
)
ACTION = "Haruhi smiles at the brigade."
ANSWER = "Explosion is the way!"


def prepare(root: Path) -> None:
    """The files the contexts name: a storyline and an AMADEUS persona index."""
    write_storyline(root / STORY)
    doc = parse_markdown(PERSONA, "Megumin")
    index = PersonaIndex(
        open_client(str(root / PERSONA_DIR)), "Megumin", "acts", HashingTextEmbedding()
    )
    index.sync(doc, split_persona(doc))
    write_event_stream(prepared_novel(root / DATA_DIR))  # ARCANE: novel, arcs, probes, index


def run_input(graph: str, wiki_url: str) -> dict[str, Any]:
    """The input of one README run of ``graph``."""
    if graph == "profiler":
        return {"name": "Kenshiro", "franchise": "Fist of the North Star", "wiki_url": wiki_url}
    if graph == "amadeus":
        return {"character": "Megumin", "query": "What do you love?"}
    if graph in ARCANE:
        return _arcane_input(graph)
    return {"character": "Haruhi", "position": 120}


def _arcane_input(graph: str) -> dict[str, Any]:
    if graph == "arcane_roleplay":
        return {"novel": "the_river", "probe_id": ARCANE_PROBE, "phase_idx": 0, "mode": "arc"}
    if graph == "arc_build":
        return {"novel": "the_river", "character": "Ada", "split": "train"}
    if graph == "probe_build":
        return {
            "novel": "the_river",
            "character": "Ada",
            "axis_id": "final_intra_01",
            "types": ["in_world"],
        }
    # A fresh results folder per run: a rerun into the same one would (rightly) skip the unit.
    out = f"eval-out-{next(_EVAL_RUNS)}"
    return {"novels": ["the_river"], "modes": ["vanilla"], "limit": 1, "out_dir": out}


def run_context(graph: str, memory: bool) -> dict[str, Any]:
    """The README's context for ``graph``; ``memory`` adds a persistent folder where it has one.

    Models, server, Tavily and cache are left out: they come from the environment.
    """
    if graph == "profiler":
        return {"max_rounds": 1} if memory else {"max_rounds": 1, "cache_dir": None}
    if graph == "amadeus":
        return {"method": "amadeus", "memory_dir": PERSONA_DIR} if memory else {"method": "none"}
    if graph in ARCANE:  # without memory: no answer cache, so every run calls the model
        return {"data_dir": DATA_DIR} if memory else {"data_dir": DATA_DIR, "cache_dir": "none"}
    context: dict[str, Any] = {"storyline_path": STORY}
    if memory:
        context["memory_dir"] = f"memory-{graph}"
    return context


def _relevant(messages: list[BaseMessage]) -> dict[str, Any]:
    return {"reason": "r", "relevant": "fact 2 " in prompt_text(messages)}


def _profile(messages: list[BaseMessage]) -> dict[str, Any]:
    text = prompt_text(messages)
    return {"statements": [line[2:] for line in text.splitlines() if line.startswith("- ")]}


def scripted_model() -> ScriptedChatModel:
    """One model answering every role of every graph."""
    responders = {
        **profiler_model(score=0.9).responders,
        **bookmarks_model().responders,
        "ExtractedFacts": lambda messages: {"facts": ["Haruhi leads the brigade."]},
        "CharacterProfile": _profile,
        "RelevanceVerdict": _relevant,
        "CharacterAttributes": lambda messages: {
            "belief_and_value": "Explosions first.",
            "psychological_traits": "Proud.",
        },
        "text": lambda messages: ANSWER,
        **arc_responders(),
        **ProbeScript().responders(),
        "PhaseJudgement": lambda messages: {"scores": {"apf": 70, "rpf": 60, "rae": 50}},
        "TrajectoryJudgement": lambda messages: {
            "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60}
        },
    }
    return ScriptedChatModel(responders=responders)


def check_result(graph: str, memory: bool, result: dict[str, Any]) -> None:
    """What a README run of ``graph`` must give back."""
    if graph == "profiler":
        assert result["profile"].startswith("I am Kenshiro")
        assert {s["origin"] for s in result["sources"]} == {"web", "wiki"}
    elif graph in ARCANE:
        _check_arcane(graph, result)
    elif graph == "amadeus":
        assert result["response"] == ANSWER
        if memory:
            assert any("fact 2 " in chunk["text"] for chunk in result["selected"])
        else:
            assert result["knowledge"] == []
    else:
        assert result["action"] == ACTION
        if graph == "bookmarks":
            assert result["stats"]["new"] >= 1 and result["grounding"]


def _check_arcane(graph: str, given: dict[str, Any]) -> None:
    # In process the records are pydantic objects; over HTTP they arrive as JSON.
    result = json.loads(json.dumps(given, default=lambda o: o.model_dump(mode="json")))
    if graph == "arcane_roleplay":
        assert result["response"] == ANSWER and "chapter 2." in result["system"]
        assert all(c <= 2 for c in result["context_chapters"])
    elif graph == "arc_build":
        assert sorted(a["axis_id"] for a in result["arcs"]) == ["final_intra_01", "final_rel_01"]
    elif graph == "probe_build":
        assert len(result["probes"]) == 3
    else:
        assert len(result["done"]) == 1 and result["skipped"] == 0
