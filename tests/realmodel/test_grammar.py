"""Every answer schema compiles, with llama.cpp itself, to the grammar that constrains its tool
call: what the engine of the real-model lane enforces, checked in about a second.

llama-cpp-python's server turns a forced tool call's JSON schema into a grammar
(``LlamaGrammar.from_json_schema``); when that raises, it constrains the answer to any JSON
instead, silently: ids, enums and required keys unenforced. The grammar is parsed later, on
the model's vocabulary, when sampling starts; a grammar that does not parse there fails the
request. Both steps run here on the lane's model file, with no server (``tests/
test_grammar_schemas.py`` checks the same schemas without the engine, in the ordinary suite).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import pytest
from answer_schemas_world import answer_schemas, tool_parameters

pytestmark = pytest.mark.realmodel


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    """The vocabulary of the lane's model (loaded alone: no weights, under a second)."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("the realmodel extra (llama-cpp-python) is not installed")
    import llama_cpp
    from lane import model_file

    model = llama_cpp.Llama(model_path=str(model_file()), vocab_only=True, verbose=False)
    yield model._model.vocab
    model.close()


def parses(vocab: Any, grammar: Any) -> bool:
    """True when llama.cpp parses ``grammar`` into a sampler for ``vocab``."""
    import llama_cpp

    text, root = grammar._grammar.encode(), grammar._root.encode()
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, text, root)
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def test_every_answer_schema_becomes_a_grammar_the_engine_parses(vocab: Any) -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    failed = []
    for name, schema in answer_schemas().items():
        try:
            grammar = LlamaGrammar.from_json_schema(json.dumps(tool_parameters(schema)))
        except Exception as error:  # the server falls back to any JSON here
            failed.append(f"{name}: not converted ({str(error)[:80]})")
            continue
        if not parses(vocab, grammar):
            failed.append(f"{name}: converted but not parsed")
    assert failed == []


def test_what_the_engine_does_with_a_schema_it_cannot_hold(vocab: Any) -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    def text(pattern: str) -> str:
        schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}}
        return json.dumps(schema)

    with pytest.raises(AssertionError, match="must start with"):
        LlamaGrammar.from_json_schema(text(r"\S"))  # unanchored: the server drops the schema
    assert not parses(vocab, LlamaGrammar.from_json_schema(text(r"^\s*\S.*$")))
    # Read on the raw JSON text: the "." that follows the quote keeps the string open.
    open_ended = LlamaGrammar.from_json_schema(text(r"^[^ ](.|\n)*$"))._grammar
    assert "dot ::= [^\\x0A\\x0D]" in open_ended and '"\\"" space' in open_ended
