"""What one OpenAI-compatible endpoint supports: its structured-output method, its window.

Servers differ. OpenAI, vLLM, Ollama and llama.cpp's own server take ``response_format:
json_schema``; llama-cpp-python's server answers it with HTTP 500 ("Input should be 'text' or
'json_object'") but constrains tool calls with a grammar; some Ollama models refuse tools.
So the method is a setting (``PERSONAE_STRUCTURED_OUTPUT``): one of :data:`METHODS`, or
``auto``, where the first structured call tries them in that order and the first the server
accepts is remembered for the endpoint (server + model) for the rest of the process.

The context window is a setting too (``PERSONAE_CONTEXT_WINDOW``); unset, it is read from
the server where it says so (llama.cpp's ``/props`` and ``/v1/models`` ``meta``, vLLM's
``max_model_len``). Prompts larger than the window are cut to fit, with a notice, rather than
sent to a server that would answer 400.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from personae.errors import ConfigurationError
from personae.process_caches import clears_on_reset

if TYPE_CHECKING:
    # Imported inside functions at run time: Settings parses the two settings with this module
    # and must load without LangChain.
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from pydantic import BaseModel

StructuredOutput = Literal["auto", "json_schema", "function_calling", "json_mode"]
METHODS: tuple[StructuredOutput, ...] = ("json_schema", "function_calling", "json_mode")
"""The methods in the order ``auto`` tries them: a JSON schema constrains the answer on most
servers (OpenAI's strict mode, vLLM, Ollama); a forced tool call is what llama-cpp-python
constrains; JSON mode (the schema in the prompt) is what is left."""
STRUCTURED_OUTPUT_VARIABLE = "PERSONAE_STRUCTURED_OUTPUT"
CONTEXT_WINDOW_VARIABLE = "PERSONAE_CONTEXT_WINDOW"
MIN_ANSWER_TOKENS = 256
"""The fewest tokens a cut prompt leaves for the answer (a quarter of the window, at least)."""
CHARS_PER_TOKEN = 3.0
"""Characters per token when fitting a prompt: below the usual ~4 of English so that a cut
prompt fits under tokenizers that split ids, JSON and non-English text finer."""
PROBE_TIMEOUT = 5.0
"""Seconds the window look-up may take before the window counts as unknown."""

_METHOD_KEY = "personae_structured_output"
_WINDOW_KEY = "personae_context_window"
_lock = threading.Lock()
_methods: dict[tuple[str, str], StructuredOutput] = {}
_windows: dict[tuple[str, str], int | None] = {}
_cut_prompts: dict[tuple[str, str], int] = {}
notices = logging.getLogger("personae.notices")
"""Things a user must know while a run goes on; the CLI prints them on stderr."""


def parse_structured_output(text: str) -> StructuredOutput:
    """The method named in ``PERSONAE_STRUCTURED_OUTPUT`` (empty: ``auto``)."""
    value = text.strip().lower() or "auto"
    if value not in ("auto", *METHODS):
        raise ConfigurationError(
            f"{STRUCTURED_OUTPUT_VARIABLE}={text!r} is not a structured-output method",
            f"set it to auto, {', '.join(METHODS)} (personae doctor shows which ones work)",
        )
    return value


def parse_context_window(text: str) -> int | None:
    """The window in ``PERSONAE_CONTEXT_WINDOW`` in tokens (empty: ask the server)."""
    value = text.strip()
    if not value:
        return None
    if not value.isdecimal() or not 512 <= int(value) <= 10_000_000:
        raise ConfigurationError(
            f"{CONTEXT_WINDOW_VARIABLE}={text!r} is not a context window",
            "set it to the server's window in tokens (512 or more), or unset it to ask the server",
        )
    return int(value)


def with_endpoint_settings(
    model: BaseChatModel,
    *,
    structured_output: str = "auto",
    context_window: int | None = None,
) -> BaseChatModel:
    """``model`` (a copy when anything changes) using this method and window.

    ``auto`` and ``None`` are the defaults: probe the method, ask the server for its window.
    """
    method = parse_structured_output(structured_output)
    metadata = dict(model.metadata or {})
    if metadata.get(_METHOD_KEY, "auto") == method and metadata.get(_WINDOW_KEY) == context_window:
        return model
    metadata[_METHOD_KEY] = method
    metadata[_WINDOW_KEY] = context_window
    return model.model_copy(update={"metadata": metadata})


def configured_method(model: BaseChatModel) -> StructuredOutput:
    """The method the settings chose for ``model`` (``auto`` unless set)."""
    value = (getattr(model, "metadata", None) or {}).get(_METHOD_KEY, "auto")
    return value if value in METHODS else "auto"


def configured_window(model: BaseChatModel) -> int | None:
    """The window the settings gave ``model`` (``None``: ask the server)."""
    value = (getattr(model, "metadata", None) or {}).get(_WINDOW_KEY)
    return value if isinstance(value, int) else None


def is_openai_client(model: BaseChatModel) -> bool:
    """True for langchain-openai's ``ChatOpenAI`` (the one client whose method we choose)."""
    return type(model).__name__ == "ChatOpenAI" and hasattr(model, "openai_api_base")


def base_url(model: BaseChatModel) -> str | None:
    """The server ``model`` talks to (``None``: OpenAI itself, or not an OpenAI client)."""
    value = getattr(model, "openai_api_base", None) if is_openai_client(model) else None
    return str(value).rstrip("/") if value else None


def is_openai_itself(model: BaseChatModel) -> bool:
    """True when ``model`` calls OpenAI's own API (which takes only ``max_completion_tokens``)."""
    url = base_url(model)
    return url is None or "api.openai.com" in url


def endpoint_key(model: BaseChatModel) -> tuple[str, str] | None:
    """``(server, model name)``: what a method or a window is remembered under."""
    if not is_openai_client(model):
        return None
    return (base_url(model) or "https://api.openai.com/v1", str(getattr(model, "model_name", "")))


def endpoint_name(key: tuple[str, str]) -> str:
    """``model@server`` as outputs record it."""
    return f"{key[1]}@{key[0]}"


def methods_to_try(model: BaseChatModel) -> tuple[StructuredOutput, ...]:
    """The method set for ``model``, the one remembered for its endpoint, or all in order."""
    method = configured_method(model)
    key = endpoint_key(model)
    if key is None:
        return ("function_calling",)  # another client (a test model): it binds the schema
    if method != "auto":
        return (method,)
    with _lock:
        chosen = _methods.get(key) if key else None
    return (chosen,) if chosen else METHODS


def remember_method(model: BaseChatModel, method: StructuredOutput) -> None:
    """Record that ``model``'s endpoint takes ``method`` (what outputs report)."""
    key = endpoint_key(model)
    if key is not None:
        with _lock:
            _methods[key] = method


def chosen_methods() -> dict[str, str]:
    """``{model@server: method}`` for every endpoint this process called for structured output.

    Commands record it in their outputs (profile.json, bench and eval summaries) so a result
    says how its structured answers were obtained.
    """
    with _lock:
        return {endpoint_name(key): method for key, method in sorted(_methods.items())}


def prompts_cut() -> dict[str, int]:
    """``{model@server: prompts cut to fit}`` in this process (empty when none was cut)."""
    with _lock:
        return {endpoint_name(key): count for key, count in sorted(_cut_prompts.items())}


def forget_endpoints() -> None:
    """Forget every remembered method, window and cut count (tests; a server swapped live)."""
    with _lock:
        _methods.clear()
        _windows.clear()
        _cut_prompts.clear()


clears_on_reset("llm_endpoint.endpoints", forget_endpoints)


async def context_window(model: BaseChatModel) -> int | None:
    """``model``'s window in tokens: the setting, else what its server states (asked once)."""
    configured = configured_window(model)
    if configured is not None:
        return configured
    key = endpoint_key(model)
    url = base_url(model)
    if key is None or url is None:
        return None  # OpenAI's API states no window; nor do other clients
    with _lock:
        if key in _windows:
            return _windows[key]
    window = await _ask_window(url, key[1], _api_key(model))
    with _lock:
        _windows[key] = window
    return window


def _api_key(model: BaseChatModel) -> str:
    secret: Any = getattr(model, "openai_api_key", None)
    value = secret.get_secret_value() if hasattr(secret, "get_secret_value") else secret
    return str(value or "")


async def _ask_window(url: str, name: str, key: str) -> int | None:
    """The window the server at ``url`` states for ``name``, or ``None`` when it says nothing."""
    import httpx

    from personae.tls import shared_ssl_context

    root = url[: -len("/v1")] if url.endswith("/v1") else url
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    verify = shared_ssl_context()  # not a CA bundle loaded per probe (~40 ms of CPU)
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT, headers=headers, verify=verify) as client:
        for address in (f"{url}/models", f"{root}/props"):
            try:
                response = await client.get(address)
                body = response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                continue
            window = window_in(body, name)
            if window is not None:
                return window
    return None


def window_in(body: Any, name: str) -> int | None:
    """The window stated in a ``/v1/models`` or ``/props`` answer, for model ``name``."""
    if not isinstance(body, Mapping):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, Mapping) and _positive(settings.get("n_ctx")):  # llama.cpp /props
        return int(settings["n_ctx"])
    if _positive(body.get("n_ctx")):
        return int(body["n_ctx"])
    entries = [e for e in body.get("data") or [] if isinstance(e, Mapping)]
    named = [e for e in entries if e.get("id") == name] or entries[:1]
    for entry in named:
        meta: Mapping[str, Any] = entry["meta"] if isinstance(entry.get("meta"), Mapping) else {}
        for value in (
            meta.get("n_ctx"),
            entry.get("max_model_len"),  # vLLM
            entry.get("context_length"),
            entry.get("n_ctx"),
            meta.get("n_ctx_train"),  # llama.cpp: the window it was trained for, its default
        ):
            if isinstance(value, int) and _positive(value):
                return value
    return None


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def tool_call_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The tool that asks for a ``schema`` answer, its parameters without patterns.

    ``function_calling`` sends it, and ``json_schema`` its parameters to every server but
    OpenAI's own. It leaves out every ``pattern``: llama.cpp's schema-to-grammar converter (used by
    llama-cpp-python's server, llama.cpp's own and Ollama) rejects a pattern that is not
    anchored (llama-cpp-python then allows any JSON), and reads an anchored one on the raw JSON
    text, where a ``.`` also matches the closing quote, so the string never ends and the model
    writes until its token cap (both seen in the real-model lane). The rest of the schema (ids
    as enums or required keys, lengths, bounded numbers as enums) is what the grammar enforces;
    the caller validates the answer against ``schema`` itself, patterns included. OpenAI's own
    strict schemas read patterns right and get the pydantic class.
    """
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tool = convert_to_openai_tool(schema)
    parameters = _without_patterns(tool["function"]["parameters"])
    return {**tool, "function": {**tool["function"], "parameters": parameters}}


def _without_patterns(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_without_patterns(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    is_string_schema = schema.get("type") == "string"
    return {
        key: value if key in ("enum", "const") else _without_patterns(value)
        for key, value in schema.items()
        if not (key == "pattern" and is_string_schema)
    }


def approximate_tokens(messages: Sequence[BaseMessage], extra: Any = None) -> int:
    """Tokens ``messages`` (and ``extra``, a tool or response schema) take, erring high."""
    chars = sum(len(_text(m)) + 16 for m in messages)
    if extra is not None:
        chars += len(json.dumps(extra, default=str))
    return int(chars / CHARS_PER_TOKEN) + 1


def answer_budget(window: int, cap: int | None) -> int:
    """Tokens kept free for the answer: ``cap`` when set, else a quarter of the window."""
    reserve = cap if cap else max(MIN_ANSWER_TOKENS, window // 4)
    return min(reserve, window // 2)


def fit_prompt(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    window: int,
    cap: int | None,
    extra: Any = None,
) -> tuple[list[BaseMessage], bool]:
    """``messages`` cut so prompt plus answer fit ``window`` tokens, and whether they were cut.

    A cut is counted per endpoint (:func:`prompts_cut`) and announced once on the
    ``personae.notices`` logger, which the CLI prints.

    The longest messages lose their middle (instructions open a message, the question or the
    answer format closes it), marked in the text so the model knows something is missing.
    """
    budget = window - answer_budget(window, cap)
    total = approximate_tokens(messages, extra)
    if total <= budget:
        return list(messages), False
    fitted = list(messages)
    excess_chars = int((total - budget) * CHARS_PER_TOKEN) + 200
    while excess_chars > 0:
        longest = max(range(len(fitted)), key=lambda i: len(_text(fitted[i])))
        text = _text(fitted[longest])
        if len(text) < 400:
            break  # nothing worth cutting is left: the server will say what it thinks
        removed = min(excess_chars, len(text) - 300)
        fitted[longest] = fitted[longest].model_copy(update={"content": _cut(text, removed)})
        excess_chars -= removed
    _record_cut(model, total, window)
    return fitted, True


def _cut(text: str, removed: int) -> str:
    keep_head = (len(text) - removed) * 3 // 4
    keep_tail = len(text) - removed - keep_head
    marker = f"\n[... {removed} characters cut to fit the model's context window ...]\n"
    return text[:keep_head] + marker + (text[len(text) - keep_tail :] if keep_tail else "")


def _text(message: BaseMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else json.dumps(content, default=str)


def _record_cut(model: BaseChatModel, tokens: int, window: int) -> None:
    key = endpoint_key(model) or ("", str(getattr(model, "model_name", "model")))
    with _lock:
        _cut_prompts[key] = _cut_prompts.get(key, 0) + 1
        first = _cut_prompts[key] == 1
    if first:  # once per endpoint: a long run would repeat it for every call
        notices.warning(
            "a prompt of about %d tokens was cut to fit the %d-token context window of %s "
            "(%s); later cuts are counted in the output's usage",
            tokens,
            window,
            endpoint_name(key),
            CONTEXT_WINDOW_VARIABLE,
        )
