"""Test doubles at the boundary: a scripted chat model, the model override, a network guard.

Shipped in the package (like pydantic-ai's ``TestModel``) so users can test their own graphs
built on Personae, and so benchmark scripts can inject latency without a real LLM. The one way
to put a model into Personae's graphs, tools and CLI is :func:`override_models`::

    from personae.testing import ScriptedChatModel, override_models

    with override_models(ScriptedChatModel(responders={...})):
        await graph.ainvoke(..., context=BookmarksContext(storyline_path=..., model="openai:x"))

Between tests, :func:`reset_runtime` gives the next one a fresh process's state: no model
override, no cached storyline, bank index, Chroma client, embedding or chat client (Personae's
suite calls it around every test; a fixture of yours can too).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import random
import re
import socket
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from personae.llm import ModelOverride, override_models, reset_model_overrides
from personae.process_caches import reset_runtime

__all__ = [
    "ModelOverride",
    "Responder",
    "ScriptedChatModel",
    "block_remote_network",
    "example_of",
    "override_models",
    "prompt_text",
    "random_of",
    "reset_model_overrides",
    "reset_runtime",
]

Responder = Callable[[list[BaseMessage]], Any]
"""Given the prompt, returns a dict/BaseModel (the tool-call args) or a str (plain content)."""


_TOOL_SPECS: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()
"""Schema class -> its OpenAI tool spec. Not cleared by ``reset_runtime``: a class's JSON
schema never changes, and an entry dies with its class (weak keys)."""


def _openai_tool(tool: Any) -> dict[str, Any]:
    """``convert_to_openai_tool``, once per schema class.

    Building a pydantic model's JSON schema costs ~5 ms, and a graph binds the same schemas on
    every call (a sixth of a bench test's CPU). Classes made per call (their own enums) are
    simply converted each time.
    """
    if not isinstance(tool, type):
        return dict(convert_to_openai_tool(tool))
    spec = _TOOL_SPECS.get(tool)
    if spec is None:
        spec = _TOOL_SPECS[tool] = dict(convert_to_openai_tool(tool))
    return {**spec, "function": dict(spec["function"])}  # nothing below changes the schema


class ScriptedChatModel(BaseChatModel):
    """A chat model whose answers come from per-schema responder functions.

    It supports ``bind_tools`` and therefore ``with_structured_output``: when a schema named
    ``X`` is bound, ``responders["X"](messages)`` gives the tool-call arguments. A responder that
    returns a ``str`` produces a plain answer with no tool call (a malformed answer, for retry
    tests). Plain ``invoke`` without tools uses ``responders["text"]``. Every call is recorded.

    A bound schema with no responder gets a schema-valid answer built from the schema (first
    enum value, declared defaults, empty strings and lists, the fewest items the schema allows),
    so a graph runs end to end before any responder is written; plain text without a responder
    is ``"(scripted answer)"``.

    With ``random_seed`` set, unscripted answers are "valid but random" instead, as an
    imperfect model that follows the schema it is given answers (:func:`random_of`): random
    enum members, ids the schema allows but the prompt never showed, empty lists where allowed,
    minimum-length strings, numbers anywhere in their bounds; plain text is a few random words.
    The randomness is seeded per call from ``random_seed``, the schema and the prompt, so a
    run gives the same answers whatever order concurrent calls take.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responders: dict[str, Responder] = Field(default_factory=dict)
    latency: float = 0.0
    """Seconds each async call sleeps (benchmarks of parallel fan-out)."""
    random_seed: int | None = None
    """Set: unscripted answers are schema-valid with random content (see the class doc)."""
    random_malformed: float = 0.0
    """With ``random_seed``: the share of structured answers that ignore the schema (plain
    text, no tool call), as a model without constrained decoding sometimes answers."""
    calls: list[tuple[str, list[BaseMessage]]] = Field(default_factory=list, repr=False)
    """Every call's schema name and prompt. Left out of ``repr``: LangChain's callbacks repr
    the model on every call, which grew with the calls (O(n^2): a third of a bench test)."""
    _classes: dict[str, type[BaseModel]] = PrivateAttr(default_factory=dict)
    """Bound schema classes, by tool name and JSON schema: concurrent calls may bind
    different schemas of one name (answer schemas built per call, with this call's ids)."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Bind tools in OpenAI format, as real chat models do.

        LangSmith's ``ls_structured_output_format`` is not kept: LangChain converts that
        schema to JSON on every call for the trace's metadata, tracing or not (~2.5 ms, a
        tenth of the edit loop's CPU), and a scripted model is never traced.
        """
        kwargs.pop("ls_structured_output_format", None)
        formatted = [_openai_tool(tool) for tool in tools]
        for tool, spec in zip(tools, formatted, strict=True):
            if isinstance(tool, type) and issubclass(tool, BaseModel):
                self._classes[_tool_key(spec)] = tool
        return self.bind(tools=formatted, **kwargs)

    def calls_for(self, name: str) -> list[list[BaseMessage]]:
        """The prompts of every call made for schema ``name`` (or ``"text"``)."""
        return [messages for called, messages in self.calls if called == name]

    def _answer(self, messages: list[BaseMessage], **kwargs: Any) -> ChatResult:
        tools = kwargs.get("tools") or []
        name = tools[0]["function"]["name"] if tools else "text"
        self.calls.append((name, list(messages)))
        responder = self.responders.get(name)
        value = (
            responder(list(messages)) if responder else self._default_answer(name, tools, messages)
        )
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        if isinstance(value, str):
            message = AIMessage(content=value)
        else:
            # An id from the call's content, not its rank: token counts (which include it) must
            # not depend on how concurrent calls happened to interleave.
            digest = hashlib.blake2b(repr((name, value)).encode(), digest_size=6).hexdigest()
            call_id = f"call_{digest}"
            message = AIMessage(
                content="", tool_calls=[{"name": name, "args": value, "id": call_id}]
            )
        prompt_tokens = count_tokens_approximately(messages)
        out_tokens = count_tokens_approximately([message]) or 1
        message.usage_metadata = {
            "input_tokens": prompt_tokens,
            "output_tokens": out_tokens,
            "total_tokens": prompt_tokens + out_tokens,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _default_answer(
        self, name: str, tools: list[dict[str, Any]], messages: Sequence[BaseMessage] = ()
    ) -> Any:
        """A schema-valid answer for a bound schema nobody scripted; fixed text otherwise.

        The schema is the one this call was given (its ``tools``), never another call's of the
        same name.
        """
        schema = tools[0]["function"].get("parameters", {}) if tools else {}
        if self.random_seed is not None:
            seed = repr((self.random_seed, name, [(m.type, m.content) for m in messages]))
            rng = random.Random(hashlib.blake2b(seed.encode(), digest_size=8).hexdigest())
            if not tools:
                return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 8)))
            if rng.random() < self.random_malformed:
                return "I think the answer is " + " ".join(rng.sample(_WORDS, 3))
            words = prompt_text(messages).split()
            return random_of(schema, schema.get("$defs", {}), rng, words)
        if not tools:
            return "(scripted answer)"
        value = example_of(schema, schema.get("$defs", {}))
        model = self._classes.get(_tool_key(tools[0]))
        if model is not None:
            model.model_validate(value)  # fails loudly if the example missed a constraint
        return value

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._answer(messages, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency:
            await asyncio.sleep(self.latency)
        return self._answer(messages, **kwargs)


def _tool_key(spec: Mapping[str, Any]) -> str:
    """A bound tool's name and JSON schema: which class a call's schema came from."""
    function = spec["function"] if "function" in spec else spec
    return json.dumps([function["name"], function.get("parameters", {})], sort_keys=True)


def example_of(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Any:
    """The simplest value ``schema`` (JSON schema) accepts: what an unscripted answer holds."""
    if "$ref" in schema:
        return example_of(defs[str(schema["$ref"]).rsplit("/", 1)[-1]], defs)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return example_of(options[0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return _example_of_type(kind, schema, defs)


def _example_of_type(kind: Any, schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Any:
    """:func:`example_of` for a schema of one ``type`` (object, array, string, number...)."""
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {key: example_of(properties[key], defs) for key in schema.get("required", [])}
    if kind == "array":
        fixed = [example_of(item, defs) for item in schema.get("prefixItems", [])]  # tuples
        item = schema.get("items", {})
        return fixed + [
            example_of(item, defs) for _ in range(int(schema.get("minItems", 0)) - len(fixed))
        ]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        bump = 1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0
        return int(low) + bump if kind == "integer" else float(low) + bump
    if kind == "boolean":
        return False
    return None


_WORDS = (
    "the a she he it they was is not never always river letter Ada Bram Kyon Haruhi door "
    "runs laughs waits refuses because tomorrow S1 S99 A1 A138 B2 B7 3 0 unknown none"
).split()
"""What random strings and plain answers are made of: words, and ids a prompt may not show."""


def random_of(
    schema: Mapping[str, Any],
    defs: Mapping[str, Any],
    rng: random.Random,
    prompt: Sequence[str] = (),
) -> Any:
    """A random value ``schema`` (JSON schema) accepts: what an imperfect but obedient model gives.

    Every constraint the schema states is kept (enums, ``const``, required keys, item counts,
    string lengths, number bounds); everything the schema leaves open is random: optional keys
    present or not, list lengths from the minimum up, strings from the minimum length (often
    empty) to a few words, an id the prompt never showed or a run of the ``prompt``'s words
    (a quote that may well occur), integers such as 138.
    """
    if "$ref" in schema:
        return random_of(defs[str(schema["$ref"]).rsplit("/", 1)[-1]], defs, rng, prompt)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return random_of(rng.choice(list(schema[key])), defs, rng, prompt)
    if schema.get("allOf"):
        return random_of(schema["allOf"][0], defs, rng, prompt)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    return _random_of_type(kind, schema, defs, rng, prompt)


def _random_of_type(
    kind: Any,
    schema: Mapping[str, Any],
    defs: Mapping[str, Any],
    rng: random.Random,
    prompt: Sequence[str],
) -> Any:
    """:func:`random_of` for a schema of one ``type``."""
    if kind == "object" or "properties" in schema:
        return _random_object(schema, defs, rng, prompt)
    if kind == "array":
        return _random_array(schema, defs, rng, prompt)
    if kind == "string":
        return _random_string(schema, rng, prompt)
    if kind in ("integer", "number"):
        return _random_number(kind, schema, rng)
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def _random_object(
    schema: Mapping[str, Any], defs: Mapping[str, Any], rng: random.Random, prompt: Sequence[str]
) -> dict[str, Any]:
    required = set(schema.get("required", []))
    return {
        key: random_of(value, defs, rng, prompt)
        for key, value in schema.get("properties", {}).items()
        if key in required or rng.random() < 0.5
    }


def _random_array(
    schema: Mapping[str, Any], defs: Mapping[str, Any], rng: random.Random, prompt: Sequence[str]
) -> Any:
    fixed = [random_of(item, defs, rng, prompt) for item in schema.get("prefixItems", [])]
    low = max(int(schema.get("minItems", 0)) - len(fixed), 0)
    high = max(int(schema.get("maxItems", low + len(fixed) + 3)) - len(fixed), low)
    count = rng.choice([low, low, rng.randint(low, min(high, low + 3))])
    items = [random_of(schema.get("items", {}), defs, rng, prompt) for _ in range(count)]
    if schema.get("uniqueItems"):
        unique = list({repr(i): i for i in items}.values())
        items = unique if len(unique) >= low else items
    return fixed + items


def _random_string(schema: Mapping[str, Any], rng: random.Random, prompt: Sequence[str]) -> str:
    low = int(schema.get("minLength", 0))
    high = int(schema.get("maxLength", 10_000))
    if schema.get("pattern") and not re.search(str(schema["pattern"]), "x" * max(low, 1)):
        return "x" * max(low, 1)  # patterns beyond "not blank" are not ours to invent
    choice = rng.random()
    if choice < 0.4 and not schema.get("pattern"):
        text = " " * low if rng.random() < 0.5 else "x" * low
    elif choice < 0.55:
        text = rng.choice(_WORDS)
    elif choice < 0.8 and prompt:
        start = rng.randrange(len(prompt))
        text = " ".join(prompt[start : start + rng.randint(1, 12)])
    else:
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))
    if schema.get("pattern") and not re.search(str(schema["pattern"]), text):
        text = "x" * max(low, 1)
    return (text + "x" * low)[: max(high, low)] if len(text) < low else text[:high]


def _random_number(kind: str, schema: Mapping[str, Any], rng: random.Random) -> Any:
    low = schema.get("minimum", schema.get("exclusiveMinimum", -5))
    high = schema.get("maximum", schema.get("exclusiveMaximum", 200))
    if kind == "integer":
        low = int(low) + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
        high = int(high) - (1 if "exclusiveMaximum" in schema and "maximum" not in schema else 0)
        return rng.choice([low, high, rng.randint(low, max(low, high))])
    return rng.choice([float(low), float(high), rng.uniform(float(low), float(high))])


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    """All message contents joined: what responders usually search in."""
    return "\n".join(str(message.content) for message in messages)


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@contextmanager
def block_remote_network() -> Iterator[None]:
    """Refuse every socket connection that is not loopback or a unix socket."""
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def guarded_connect(sock: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise ConnectionRefusedError(f"network access to {address!r} is blocked in tests")
        return original_connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise ConnectionRefusedError(f"network access to {address!r} is blocked in tests")
        return original_connect_ex(sock, address)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        socket.socket.connect = original_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = original_connect_ex  # type: ignore[method-assign]
