"""ARCANE role-play: the six context modes' prompts and the no-future-read invariant."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_record, future_marks, prepared_novel

from personae.agents.arcane.roleplayer import MODES, arc_payload
from personae.agents.arcane.timechara import make_hint, parse_chapter, parse_presence
from personae.errors import InputError
from personae.graphs.arcane.roleplay import RoleplayContext, graph
from personae.memory.arcane import novel_store
from personae.memory.arcane.novel_chunks import chunk_chapter
from personae.testing import ScriptedChatModel, override_models, prompt_text


def _text(messages: Any) -> str:
    text = prompt_text(messages)
    if "Chapter: N" in text:
        return "The scene is late.\nChapter: 5"
    if "Presence: present" in text:
        return "Presence: absent"
    return "Ada keeps her counsel."


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders={"text": _text})
    with override_models(scripted):
        yield scripted


def _context(data: Path) -> RoleplayContext:
    return RoleplayContext(data_dir=str(data), model="openai:scripted")


async def _run(data: Path, **payload: Any) -> dict[str, Any]:
    request: Any = {"novel": "the_river", **payload}
    result: dict[str, Any] = await graph.ainvoke(request, context=_context(data))
    return result


async def test_every_mode_and_phase_stays_before_the_query_chapter(
    tmp_path: Path, model: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared_novel(tmp_path)
    reads: list[int] = []
    original = novel_store.Novel.chapter

    def spy(self: novel_store.Novel, idx: int) -> novel_store.Chapter:
        reads.append(idx)
        return original(self, idx)

    monkeypatch.setattr(novel_store.Novel, "chapter", spy)
    probe = "the_river_ada_final_intra_01_iw_a1"
    for phase, qc in enumerate((2, 4, 6)):
        for mode in MODES:
            before = len(model.calls)
            reads.clear()
            result = await _run(tmp_path, probe_id=probe, phase_idx=phase, mode=mode)
            prompts = [prompt_text(m) for _, m in model.calls[before:]]
            assert result["query_chapter"] == qc
            assert all(future_marks(p, qc) == [] for p in prompts), (mode, qc)
            assert all(c <= qc for c in result["context_chapters"])
            assert all(i <= qc for i in reads), (mode, qc, reads)
            assert f"chapter {qc}." in result["system"]
            if mode in ("summary", "lifechoice"):
                shown = [c for c in range(1, 7) if f"MARK{c} events" in result["system"]]
                assert shown == list(range(max(1, qc - 4), qc + 1))
            if mode == "vanilla":
                assert "<context>" not in result["system"]


async def test_modes_put_their_payload_in_the_prompt(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    prepared_novel(tmp_path)
    probe = {"probe_id": "the_river_ada_final_intra_01_iw_a1", "phase_idx": 1}
    rag = await _run(tmp_path, mode="rag", **probe)
    assert "MARK" in rag["system"] and len(rag["context_chapters"]) <= 6
    life = await _run(tmp_path, mode="lifechoice", **probe)
    assert "[Character Description]" in life["system"] and "[Chapter " in life["system"]
    arc = await _run(tmp_path, mode="arc", **probe)
    payload = json.loads(arc["system"].split("<context>\n")[1].split("\n</context>")[0])
    assert [p["chapter_range"] for p in payload["trajectory"]] == [[1, 2], [3, 4]]
    assert "pole_end" not in payload and "evidence_summary" not in payload
    time = await _run(tmp_path, mode="timechara", **probe)
    assert "(HINT: Note that the period of the question is in the future" in time["user"]
    assert time["usage"]["llm_calls"] == 2  # temporal expert + role-play, no spatial call
    assert time["response"] == "Ada keeps her counsel."


async def test_modes_never_share_a_cached_answer(tmp_path: Path) -> None:
    """Vanilla and TimeChara without a hint send the same prompt: two samples, not one."""
    prepared_novel(tmp_path)
    experts = {"Chapter: N": "Chapter: 1", "Presence: present": "Presence: present"}

    samples = iter(range(1, 10))

    def answer(messages: Any) -> str:
        text = prompt_text(messages)
        return next((a for cue, a in experts.items() if cue in text), f"sample {next(samples)}")

    scripted = ScriptedChatModel(responders={"text": answer})
    probe = {"probe_id": "the_river_ada_final_intra_01_iw_a1", "phase_idx": 1}
    with override_models(scripted):
        vanilla = await _run(tmp_path, mode="vanilla", **probe)
        time = await _run(tmp_path, mode="timechara", **probe)
        again = await _run(tmp_path, mode="vanilla", **probe)
    assert time["hint"] is None and (time["system"], time["user"]) == (
        vanilla["system"],
        vanilla["user"],
    )
    assert time["response"] != vanilla["response"]  # asked again, not Vanilla's entry
    assert time["usage"]["llm_calls"] == 3  # both experts and the role-play
    assert again["response"] == vanilla["response"] and again["usage"]["llm_calls"] == 0
    assert len(scripted.calls) == 4


def test_arc_payload_keeps_the_ending_only_when_nothing_is_hidden() -> None:
    arc = arc_record()
    full = arc_payload(arc, 6)
    assert full["pole_end"] == "together MARK6" and full["arc_direction"] == "positive"
    assert "literary_validation" not in full and "evidence_summary" not in full
    early = arc_payload(arc, 2)
    assert len(early["trajectory"]) == 1 and "pole_end" not in early


def test_timechara_parsing_and_hints() -> None:
    assert parse_chapter("reasoning\nChapter: 12") == 12
    assert parse_chapter("Chapter: unknown") is None and parse_chapter("no idea") is None
    assert parse_presence("x\nPresence: absent") == "absent"
    assert parse_presence("garbled") == "present"
    assert make_hint(character="Ada", predicted=9, presence=None, query_chapter=4) is not None
    absent = make_hint(character="Ada", predicted=None, presence="absent", query_chapter=4)
    assert absent is not None and "had not participated" in absent
    assert make_hint(character="Ada", predicted=3, presence="present", query_chapter=4) is None


def test_chunks_stay_inside_chapters() -> None:
    chunks = chunk_chapter(3, "x" * 4000)
    assert [c.start for c in chunks] == [0, 1200, 2400, 3600]
    assert all(len(c.text) <= 1500 and c.chapter == 3 for c in chunks)


async def test_missing_inputs_say_which_command_to_run(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    from arcane_world import imported_novel

    imported_novel(tmp_path)
    with pytest.raises(InputError, match="personae arcane prepare the_river"):
        await _run(tmp_path, mode="summary", character="Ada", chapter=3, scenario="x")
    with pytest.raises(InputError, match="unknown mode"):
        await _run(tmp_path, mode="oracle", character="Ada", chapter=3, scenario="x")
    with pytest.raises(InputError, match="out of range"):
        await _run(tmp_path, mode="vanilla", character="Ada", chapter=9, scenario="x")
    with pytest.raises(InputError, match="never mentioned"):
        await _run(tmp_path, mode="vanilla", character="Zed", chapter=3, scenario="x")


async def test_interacting_with_is_keyed_on_a_relational_axis(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    """T31: "[If the axis is relational:] You are interacting with <target_character>."."""
    from personae.memory.arcane.records import write_jsonl_atomic

    novel = prepared_novel(tmp_path)
    probe = {"probe_id": "the_river_ada_final_intra_01_iw_a1", "phase_idx": 1, "mode": "vanilla"}
    intra = arc_record().model_copy(update={"target_character": "Bram"})
    write_jsonl_atomic(novel.folder / "arcs.jsonl", [intra])
    assert "interacting with" not in (await _run(tmp_path, **probe))["system"]
    relational = intra.model_copy(update={"axis_type": "relational"})
    write_jsonl_atomic(novel.folder / "arcs.jsonl", [relational])
    assert "You are interacting with Bram." in (await _run(tmp_path, **probe))["system"]


def test_designers_key_the_relational_block_on_the_axis_type() -> None:
    """T22-T24's "[Relational arcs only:]" block: an intrapersonal axis never gets it."""
    from personae.agents.arcane.designers import designer_messages

    intra = arc_record().model_copy(update={"target_character": "Bram"})
    relational = intra.model_copy(update={"axis_type": "relational"})
    for kind in ("in_world", "in_scenario"):
        common: Any = {"novel_title": "The River", "k": 1, "decision_variable": "trust"}
        assert "RELATIONAL TARGET" not in prompt_text(designer_messages(kind, arc=intra, **common))
        assert "RELATIONAL TARGET" in prompt_text(designer_messages(kind, arc=relational, **common))
