"""Every structured call states in its schema what the code checks in the answer (issue 16 §1).

How this test can fail, in two parts:

1. **A static walk** over ``agents/``, ``graphs/`` and ``evals/`` finds every structured call
   (``call_structured(...)``, ``cache.call_structured(...)``, ``cache.structured(...)``) and
   fails on any that passes a post-hoc ``check=`` not listed in :data:`NOT_EXPRESSIBLE`, the
   checks no JSON schema can state (each with why, and the ``repair=`` that salvages the answer
   instead of failing). It also fails when an ``agents/`` module defines a per-call schema
   factory (``def ..._schema(``) that :data:`INVARIANTS` does not cover.
2. **Counter-examples** for each per-call schema factory: the invariant the code relies on when
   it reads the answer (the post-hoc check it used to run, restated here) must hold for every
   answer the schema accepts (``model_validate``). Candidates come from
   :func:`~personae.testing.random_of` on the schema with its constraints stripped (enums
   widened to any string, bounds, lengths, ``required`` and patterns dropped), so most break
   something; the test also requires that the schema rejects some of them (it has teeth) and
   accepts every answer drawn from the real schema (it is satisfiable).
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from source_tree import parsed, walked

from personae.agents.amadeus import incharacter_expert
from personae.agents.amadeus.incharacter_rater import PoleRating, choice_conversion_schema
from personae.agents.answer_schemas import answers_by_key
from personae.agents.arcane import axes, designers, judges, probe_prep, validators
from personae.agents.bookmarks import actor, behavior_checker, matcher, state_syncer
from personae.agents.characterhub import (
    citation_checker,
    evidence_summarizer,
    profile_rewriter,
    prose_checker,
    support_judge,
)
from personae.testing import random_of

ROOT = Path(__file__).resolve().parents[1]

NOT_EXPRESSIBLE: dict[tuple[str, str], str] = {
    ("agents/characterhub/deep_searcher.py", "write_document"): (
        "the [S#] citations sit inside free Markdown, which no enum can constrain; "
        "repair= drops an unknown id from the text (counted in usage.dropped_ids)"
    ),
}
"""(file, enclosing function) of the only checks left after the call: why the schema cannot
state them."""

_CALLS = {"call_structured", "structured"}


def structured_calls() -> list[tuple[str, str, ast.Call]]:
    """(file, enclosing function, call) for every structured call of the three job folders."""
    found = []
    for folder in ("agents", "graphs", "evals"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = parsed(path)
            for function in ast.walk(tree):
                if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(function):
                    if isinstance(node, ast.Call):
                        name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                        if name in _CALLS:
                            found.append((str(path.relative_to(ROOT)), function.name, node))
    return found


def test_no_structured_call_checks_what_its_schema_does_not_state() -> None:
    calls = structured_calls()
    assert len(calls) > 40  # the walk sees them: one per role, cache and node
    checked = {
        (path, function): {k.arg for k in call.keywords}
        for path, function, call in calls
        if any(k.arg == "check" for k in call.keywords)
    }
    # nested functions are walked twice (once inside their parent): same call, same keywords
    unlisted = sorted(set(checked) - set(NOT_EXPRESSIBLE))
    assert unlisted == [], "a post-hoc check= that the answer schema does not state"
    for site in NOT_EXPRESSIBLE:
        assert "repair" in checked.get(site, set()), f"{site}: salvage it instead of failing"


def test_every_per_call_schema_factory_has_its_invariant_here() -> None:
    factories = set()
    for path in (ROOT / "agents").rglob("*.py"):
        for node in walked(path):
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_schema"):
                if not node.name.startswith("_") and node.name != "per_call_schema":
                    factories.add(node.name)
    assert factories == {name for name, _, _ in INVARIANTS} | {"cited_fact_schema"}


# --------------------------------------------------------------------------- invariants


def _keys(answer: BaseModel, wanted: list[str]) -> None:
    assert list(answers_by_key(answer)) == wanted


def _claims(answer: BaseModel) -> None:
    _keys(answer, ["1", "2", "3"])
    assert set(answers_by_key(answer).values()) <= {"supported", "unsupported"}


def _prose(answer: BaseModel) -> None:
    _keys(answer, ["1", "2"])
    for check in answers_by_key(answer).values():
        assert check.verdict in ("supported", "no_claim", "unsupported")
        assert set(check.fact_ids) <= {1, 2, 3}


def _cited(facts: list[Any]) -> None:
    for fact in facts:
        assert fact.source_ids and set(fact.source_ids) <= {"S1", "S2"}
        assert fact.text.strip()


def _notes(answer: Any) -> None:
    _cited(answer.facts)


def _draft(answer: Any) -> None:
    assert answer.profile.strip()
    _cited(answer.facts)


def _alignment(answer: BaseModel) -> None:
    _keys(answer, ["4", "5"])
    labels = {"supported", "partially supported", "irrelevant", "contradicted"}
    assert {j.evaluation for j in answers_by_key(answer).values()} <= labels


def _verdicts(answer: BaseModel) -> None:
    _keys(answer, ["A1", "A2"])
    assert all(isinstance(v, bool) for v in answers_by_key(answer).values())


def _match(answer: Any) -> None:
    decision, _, short_id = answer.choice.partition(" ")
    assert (decision, short_id) == ("none", "") or (
        decision in ("reuse", "derive") and short_id in ("B1", "B2")
    )


def _choices(answer: BaseModel) -> None:
    _keys(answer, ["3", "12"])
    assert set(answers_by_key(answer).values()) <= {"1", "2", "3", "4", "5", "x"}


def _percentages(answer: Any) -> None:
    shares = [incharacter_expert.percentage(getattr(answer.result, pole)) for pole in "EI"]
    assert all(0 <= share <= 100 for share in shares)  # first_share reads any such pair


def _rating(answer: Any) -> None:
    assert 1 <= answer.result <= 5


def _ranges(answer: Any) -> None:
    for axis in [*answer.intrapersonal_axes, *answer.relational_axes]:
        for phase in axis.trajectory:
            assert all(1 <= c <= 6 for c in phase.chapter_range)
            assert len(phase.chapter_range) == 2


def _count(field: str, n: int) -> Callable[[Any], None]:
    def check(answer: Any) -> None:
        assert len(getattr(answer, field)) == n

    return check


def _location(answer: Any) -> None:
    assert answer.event_id in (None, "ch2_evt01", "ch3_evt02")


def _phasefit(answer: Any) -> None:
    assert 0 <= answer.most_likely_phase_idx <= 2


def _discrimination(answer: Any) -> None:
    assert all(0 <= p.from_phase_idx <= 1 for p in answer.weak_pairs)  # (k, k+1) of 3 phases


def _scores(answer: Any) -> None:
    assert all(1 <= int(v) <= 10 for v in answer.scores.model_dump().values())


INVARIANTS: list[tuple[str, Callable[[], type[BaseModel]], Callable[[Any], None]]] = [
    ("claim_checks_schema", lambda: citation_checker.claim_checks_schema([1, 2, 3]), _claims),
    ("prose_check_schema", lambda: prose_checker.prose_check_schema([1, 2], 3), _prose),
    (
        "evidence_notes_schema",
        lambda: evidence_summarizer.evidence_notes_schema(("S1", "S2")),
        _notes,
    ),
    (
        "profile_draft_schema",
        lambda: profile_rewriter.profile_draft_schema(("S1", "S2")),
        _draft,
    ),
    ("alignment_list_schema", lambda: support_judge.alignment_list_schema([4, 5]), _alignment),
    (
        "evidence_verdicts_schema",
        lambda: behavior_checker.evidence_verdicts_schema(["A1", "A2"]),
        _verdicts,
    ),
    ("match_choice_schema", lambda: matcher.match_choice_schema(2), _match),
    ("choice_conversion_schema", lambda: choice_conversion_schema(["3", "12"], 5), _choices),
    (
        "pole_rating_schema",
        lambda: incharacter_expert.pole_rating_schema("E", "I"),
        _percentages,
    ),
    ("scale_rating_schema", lambda: incharacter_expert.scale_rating_schema(1, 5), _rating),
    ("induction_schema", lambda: axes.induction_schema(6), _ranges),
    ("reconciliation_schema", lambda: axes.reconciliation_schema(6), _ranges),
    ("decision_schema", lambda: probe_prep.decision_schema(3), _count("phase_contrasts", 2)),
    ("life_stages_schema", lambda: probe_prep.life_stages_schema(3), _count("phases", 3)),
    ("abstraction_schema", lambda: probe_prep.abstraction_schema(3), _count("abstract_phases", 3)),
    ("draft_schema", lambda: designers.draft_schema(3), _count("phase_responses", 3)),
    ("location_schema", lambda: designers.location_schema(("ch2_evt01", "ch3_evt02")), _location),
    ("phasefit_schema", lambda: validators.phasefit_schema(3), _phasefit),
    ("discrimination_schema", lambda: validators.discrimination_schema(3), _discrimination),
    ("phase_judgement_schema", lambda: judges.phase_judgement_schema(10), _scores),
    ("trajectory_judgement_schema", lambda: judges.trajectory_judgement_schema(10), _scores),
]
"""Per-call factory, its schema on small example ids, and what the code relies on in it."""

STATIC: list[tuple[type[BaseModel], Callable[[Any], None]]] = [
    (PoleRating, lambda a: 0 <= a.first_percent <= 100),  # the other pole is 100 minus it
    (actor.NextAction, lambda a: a.action.strip()),
    (behavior_checker.BehaviorSummary, lambda a: a.answer.strip()),
    (state_syncer.StateUpdate, lambda a: a.answer.strip()),
]
"""Fixed schemas whose old checks (two percentages summing to 100, a non-blank answer) the
schema now states."""

_LOOSE = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems")
_LOOSE_TEXT = ("minLength", "maxLength", "pattern", "const")


def loosen(schema: Any) -> Any:
    """``schema`` with every constraint dropped: enums also accept any string, nothing required."""
    if isinstance(schema, list):
        return [loosen(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    loose: dict[str, Any] = {
        k: loosen(v) for k, v in schema.items() if k not in (*_LOOSE, *_LOOSE_TEXT)
    }
    loose.pop("required", None)
    loose.pop("additionalProperties", None)
    if "enum" in loose:
        return {"anyOf": [{"enum": loose["enum"]}, {"type": "string"}, {"type": "integer"}]}
    if loose.get("type") in ("integer", "number"):
        loose = {"anyOf": [loose, {"type": "integer", "minimum": -3, "maximum": 40}]}
    if loose.get("type") == "array":
        loose["maxItems"] = 5
    return loose


WRONG = ["S1", "S2", "S99", "A1", "A2", "A7", "B1", "B2", "B9", "1", "2", "9", "x", "7", " "]
"""Strings the loose candidates draw from: right and wrong ids, scale points, a blank."""


def _holds(invariant: Callable[[Any], Any], answer: Any) -> bool:
    try:
        return invariant(answer) is not False
    except (AssertionError, AttributeError, KeyError, ValueError):
        return False


@pytest.mark.parametrize(
    ("name", "factory", "invariant"), INVARIANTS, ids=[name for name, _, _ in INVARIANTS]
)
def test_the_schema_rejects_every_answer_the_code_could_not_use(
    name: str, factory: Callable[[], type[BaseModel]], invariant: Callable[[Any], Any]
) -> None:
    _assert_schema_states(factory(), invariant)


@pytest.mark.parametrize(
    ("schema", "invariant"), STATIC, ids=[schema.__name__ for schema, _ in STATIC]
)
def test_fixed_schemas_state_their_old_checks(
    schema: type[BaseModel], invariant: Callable[[Any], Any]
) -> None:
    _assert_schema_states(schema, invariant)


def _assert_schema_states(schema: type[BaseModel], invariant: Callable[[Any], Any]) -> None:
    rng = random.Random(16)
    full = schema.model_json_schema()
    defs = full.get("$defs", {})
    loose, loose_defs = loosen(full), loosen(defs)
    rejected, broken = 0, []
    for _ in range(400):
        candidate = random_of(loose, loose_defs, rng, WRONG)
        try:
            answer = schema.model_validate(candidate)
        except ValidationError:
            rejected += 1
            continue
        if not _holds(invariant, answer):
            broken.append(repr(candidate)[:300])
    assert broken == [], f"{schema.__name__} accepts answers the code cannot use: {broken[:2]}"
    assert rejected > 20, f"{schema.__name__}: the loose candidates were hardly ever rejected"
    for _ in range(50):  # every answer a schema-following model may give is usable
        answer = schema.model_validate(random_of(full, defs, rng, WRONG))
        assert _holds(invariant, answer)
