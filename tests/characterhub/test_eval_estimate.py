"""`eval profile` prints an estimate within 0.85-1.15 of the calls it then makes.

With the paper's protocol (each text judged against the whole knowledge list in one call) the
calls do not depend on how many points the extractor finds; with ``--judge-batch`` they do,
and the estimate assumes the paper's density (:data:`POINTS_PER_1K_TOKENS`): the scripted
extractor here keeps every fourth sentence of the page, about that density.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from profile_eval_world import FIXTURE, scripted_model, sentence_extractor, write_profiles

from personae.cli import main
from personae.testing import override_models


def sparse(messages: list[BaseMessage]) -> dict[str, Any]:
    """The world's extractor (every sentence a point) keeping every fourth point."""
    answer = sentence_extractor(messages)
    answer["knowledge_points"] = answer["knowledge_points"][::4]
    return answer


@pytest.mark.parametrize("batch", [[], ["--judge-batch", "2"]])
def test_the_estimate_is_within_15_percent_of_the_calls(
    batch: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = scripted_model()
    model.responders["ExtractedKnowledge"] = sparse
    override_models(specs={"openai:eval-test": model})
    allowed, excluded = write_profiles(tmp_path)
    report = tmp_path / "report.json"
    argv = ["characterhub", "eval", str(allowed), str(excluded), "--reference", str(FIXTURE)]
    argv += ["--out", str(report), *batch, "--model", "openai:eval-test"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    found = re.search(r"estimated: ([\d,]+) LLM calls", err)
    assert found, err
    estimated = int(found.group(1).replace(",", ""))
    made = json.loads(report.read_text(encoding="utf-8"))["usage"]["llm_calls"]
    assert made == len(model.calls)
    assert 0.85 <= estimated / made <= 1.15, (estimated, made)
