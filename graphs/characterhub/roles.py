"""The profiler's model roles and their sampling: the paper's search agent and rewriter apart.

CharacterHub runs two models with their own sampling (§5.1, App. A, Table 3): the search agent
(Gemini-2.5-Pro: temperature 1.0, top-p 0.95, top-k 64) and the profile rewriter (Qwen-plus:
0.85, 0.8, 50). A run names each role's model (``search_model``, ``rewrite_model``; empty: the
strong model) and sampling (``search_sampling``, ``rewrite_sampling`` as
``temperature=1.0,top_p=0.95,top_k=64``; empty: Table 3's values under the ``paper`` method, the
strong role's sampling under ``planned``). Top-k is not an OpenAI API parameter: it goes in the
request body (``extra_body``) to any other OpenAI-compatible server (vLLM, llama.cpp, Ollama,
OpenRouter take it); to OpenAI's own API it is not sent, and ``profile.json`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel

from personae.errors import ConfigurationError
from personae.llm import with_sampling

PAPER_SAMPLING: Mapping[str, str] = {
    "search": "temperature=1.0,top_p=0.95,top_k=64",
    "rewrite": "temperature=0.85,top_p=0.8,top_k=50",
}
"""Table 3: Gemini (the search agent) and Qwen-plus (the rewriter)."""
PAPER_MODELS: Mapping[str, str] = {
    "search": "Gemini-2.5-Pro (§5.1)",
    "rewrite": "Qwen-plus (§5.1)",
}
_BOUNDS = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0), "top_k": (1.0, 1000.0)}
SAMPLING_FIX = "write it as temperature=1.0,top_p=0.95,top_k=64 (any of the three)"


def parse_role_sampling(text: str, flag: str) -> dict[str, float | int]:
    """``{"temperature": 1.0, "top_p": 0.95, "top_k": 64}`` from ``temperature=1.0,...``.

    Raises:
        ConfigurationError: An unknown key, a value that is not a number, or out of range.
    """
    values: dict[str, float | int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, number = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in _BOUNDS:
            raise ConfigurationError(f"{flag} {part!r} is not a sampling setting", SAMPLING_FIX)
        try:
            value = float(number)
        except ValueError:
            raise ConfigurationError(f"{flag} {part!r} is not a number", SAMPLING_FIX) from None
        low, high = _BOUNDS[key]
        if not low <= value <= high or (key == "top_k" and not value.is_integer()):
            raise ConfigurationError(f"{flag} {key} {number} is out of range", SAMPLING_FIX)
        values[key] = int(value) if key == "top_k" else value
    return values


def accepts_top_k(base_url: str) -> bool:
    """Whether the server takes ``top_k``: any OpenAI-compatible server but OpenAI's own API."""
    host = urlsplit(base_url).hostname or ""
    return bool(base_url) and not (host == "openai.com" or host.endswith(".openai.com"))


def sampled(
    model: BaseChatModel, sampling: Mapping[str, float | int], base_url: str
) -> BaseChatModel:
    """``model`` with temperature / top-p set, and top-k in the body where the server takes it."""
    model = with_sampling(model, {k: float(v) for k, v in sampling.items() if k != "top_k"})
    top_k = sampling.get("top_k")
    if top_k is None or not accepts_top_k(base_url) or "extra_body" not in type(model).model_fields:
        return model
    body = {**(getattr(model, "extra_body", None) or {}), "top_k": int(top_k)}
    return model.model_copy(update={"extra_body": body})


def role_record(model: str, sampling: Mapping[str, float | int], base_url: str) -> dict[str, Any]:
    """What ``profile.json`` records of a role: model, sampling, and whether top-k was sent."""
    record: dict[str, Any] = {"model": model, **sampling}
    if "top_k" in sampling:
        record["top_k_sent"] = accepts_top_k(base_url)
    return record
