"""The arc build's estimate, printed before a build, within 0.85-1.15 of the calls it makes.

The calls per chapter and the fixed calls are known; the critics' are three per merged axis,
which the estimate counts at the paper's average (``AXES_PER_CHARACTER``): the scripted
reconciliation here merges that many axes, all found by both streams (none dropped).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import _merged, arc_responders, imported_novel, reconcile_answer

from personae.agents.arcane.costs import AXES_PER_CHARACTER, estimate_arc_build
from personae.graphs.arcane.arc_build import ArcBuildContext, build_graph
from personae.testing import ScriptedChatModel, override_models


def paper_sized(messages: Any) -> dict[str, Any]:
    """T15 merging the paper's average number of axes, every one matched by both streams."""
    answer = reconcile_answer(messages)
    names = ["Agency vs communion", *(f"Axis {n}" for n in range(2, AXES_PER_CHARACTER + 1))]
    answer["intrapersonal_axes"] = [
        _merged(f"final_intra_{n:02d}", name, "both") for n, name in enumerate(names, start=1)
    ]
    answer["relational_axes"] = []
    return answer


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders={**arc_responders(), "Reconciliation": paper_sized})
    with override_models(scripted):
        yield scripted


async def test_the_estimate_is_within_15_percent_of_the_calls(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    novel = imported_novel(tmp_path)
    estimate = estimate_arc_build(novel, ["Ada"])
    request: Any = {"novel": "the_river", "character": "Ada", "split": "train"}
    context = ArcBuildContext(data_dir=str(tmp_path), model="openai:scripted")
    result = await build_graph().ainvoke(request, context=context)
    made = result["usage"]["llm_calls"]
    assert made == len(model.calls) and len(model.calls_for("CriticAnswer")) == 18
    assert 0.85 <= estimate.calls / made <= 1.15, (estimate.calls, made)
