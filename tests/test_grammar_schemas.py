"""Every answer schema is one a tool-call grammar enforces whole (issue 16 §1, §3).

The real-model lane found it: llama.cpp ignores ``minimum``/``maximum`` (the 16Personalities
rating broke its 0..100 bound); the unanchored ``\\S`` of "not blank" made it drop every
schema holding a text field for "any JSON", so claim and item ids went unenforced; and an
anchored "not blank" pattern made every such string endless, since the grammar reads the
pattern on the raw JSON text, where ``.`` also matches the closing quote.
``tests/realmodel/test_grammar.py`` compiles each schema with the engine itself.
"""

from __future__ import annotations

from answer_schemas_world import answer_schemas, grammar_gaps, tool_parameters
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import bounded, non_blank


def test_every_answer_schema_states_its_checks_in_what_grammars_enforce() -> None:
    schemas = answer_schemas()
    assert len(schemas) > 60  # the walk sees the roles' schemas
    gaps = [f"{name}{gap}" for name, schema in schemas.items() for gap in _gaps(schema)]
    assert gaps == []


def _gaps(schema: type[BaseModel]) -> list[str]:
    return [f" {gap}" for gap in grammar_gaps(tool_parameters(schema))]


class _Loose(BaseModel):
    score: int = Field(ge=1, le=10)
    share: float = Field(ge=0, le=1)
    text: str = Field(pattern=r"\S")
    word: str = Field(pattern=r"^\w+$")
    line: str = Field(pattern=r"^[^ ](.|\n)*$")
    code: str = Field(pattern=r"^[A-Z][0-9]+$")


class _Tight(BaseModel):
    score: int = bounded(1, 10)
    share: float = bounded(0, 1, tenths=True)
    text: str = non_blank("said")


def test_the_gap_finder_names_bounds_and_patterns_a_grammar_misses() -> None:
    gaps = list(grammar_gaps(_Loose.model_json_schema()))
    assert any("/score: minimum=1" in gap for gap in gaps)
    assert any("/share: maximum=1" in gap for gap in gaps)
    assert any("'\\\\S' is not anchored" in gap for gap in gaps)
    assert any("'^\\\\w+$' uses \\s-like escapes" in gap for gap in gaps)
    assert any("/line: pattern" in gap and "never ends" in gap for gap in gaps)
    assert not any("/code:" in gap for gap in gaps)  # ids and letters: a grammar holds them
    # a tool call leaves patterns out; bounds stay a gap until they are an enum
    assert [gap.split(":")[0] for gap in _gaps(_Loose)] == [" /score"] * 2 + [" /share"] * 2
    assert _gaps(_Tight) == []


def test_bounded_numbers_list_their_values_and_keep_their_bounds() -> None:
    properties = _Tight.model_json_schema()["properties"]
    assert properties["score"]["enum"] == list(range(1, 11))
    assert properties["share"]["enum"] == [n / 10 for n in range(11)]
    assert _Tight.model_validate({"score": 7, "share": 0.35, "text": "x"}).share == 0.35
    for bad in ({"score": 11}, {"score": 0}, {"share": 1.1}):
        assert not _valid({"score": 5, "share": 0.5, "text": "x", **bad})


def test_non_blank_asks_a_tool_call_for_one_character_and_validates_the_rest() -> None:
    assert _Tight.model_json_schema()["properties"]["text"]["pattern"] == "\\S"
    sent = tool_parameters(_Tight)["properties"]["text"]
    assert sent == {"type": "string", "minLength": 1, "description": "said"}
    for said in ("x", "  Kenshiro", "first line\nsecond line", "\tTabbed", 'He said "no"'):
        assert _valid({"score": 1, "share": 0, "text": said}), said
    for blank in ("", " ", "\n", " \t\r\n "):
        assert not _valid({"score": 1, "share": 0, "text": blank})


def _valid(answer: dict[str, object]) -> bool:
    try:
        _Tight.model_validate(answer)
    except ValueError:
        return False
    return True
