"""all-MiniLM-L6-v2 as an ONNX graph, written by hand, for onnxruntime: the reference of the
MiniLM benchmark (benchmarks/bench_minilm.py).

Why by hand: onnxruntime is in the environment (a chromadb dependency) but the ``onnx`` package
that builds graphs is not, and torch is not installed to export one. An ONNX model is a protobuf
message; the few message types a BERT encoder needs are encoded here directly (field numbers
from onnx.proto3). The graph computes what sentence-transformers computes (BertModel with the
checkpoint's weights: embeddings + LayerNorm, 6 layers of self-attention and feed-forward with
exact-erf GELU); mean pooling and normalisation are done by the caller, as for the numpy model.
onnxruntime's graph optimiser fuses it as it fuses exported models (GELU, bias adds, MatMuls).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable

import numpy as np

FLOAT, INT64 = 1, 7
"""TensorProto data types."""


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes) -> bytes:
    return _key(field, 2) + _varint(len(value)) + value


def _str(field: int, value: str) -> bytes:
    return _bytes(field, value.encode("utf-8"))


def _float(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", value)


def tensor(name: str, array: np.ndarray) -> bytes:
    """TensorProto: dims (1), data_type (2), name (8), raw_data (9)."""
    kind = INT64 if array.dtype == np.int64 else FLOAT
    data = np.ascontiguousarray(array, dtype=np.int64 if kind == INT64 else np.float32)
    dims = b"".join(_int(1, d) for d in data.shape)
    return dims + _int(2, kind) + _str(8, name) + _bytes(9, data.tobytes())


def attribute(name: str, value: float | int | list[int]) -> bytes:
    """AttributeProto: name (1), f (2), i (3), ints (8), type (20: FLOAT 1, INT 2, INTS 7)."""
    if isinstance(value, float):
        return _str(1, name) + _float(2, value) + _int(20, 1)
    if isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, 2)
    return _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, 7)


def node(op: str, inputs: Iterable[str], outputs: Iterable[str], **attributes: object) -> bytes:
    """NodeProto: input (1), output (2), op_type (4), attribute (5)."""
    body = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
    body += _str(4, op)
    for name, value in attributes.items():
        body += _bytes(5, attribute(name, value))  # type: ignore[arg-type]
    return body


def value_info(name: str, kind: int, dims: list[str | int]) -> bytes:
    """ValueInfoProto: name (1), type (2: TypeProto.tensor_type (1): elem_type (1), shape (2))."""
    shape = b"".join(_bytes(1, _str(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    tensor_type = _int(1, kind) + _bytes(2, shape)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def minilm_graph(weights: dict[str, np.ndarray], layers: int, heads: int, eps: float) -> bytes:
    """The serialised ModelProto of the encoder (inputs ids, types, positions, bias)."""
    hidden = weights["embeddings.word_embeddings.weight"].shape[1]
    size = hidden // heads
    nodes: list[bytes] = []
    inits: dict[str, np.ndarray] = {}

    def weight(name: str) -> str:
        inits.setdefault(name, weights[name])
        return name

    def const(name: str, array: np.ndarray) -> str:
        inits.setdefault(name, array)
        return name

    def linear(x: str, name: str, out: str) -> str:
        transposed = f"{name}.weight.T"
        inits.setdefault(transposed, np.ascontiguousarray(weights[f"{name}.weight"].T))
        nodes.append(node("MatMul", [x, transposed], [out + ".mm"]))
        nodes.append(node("Add", [out + ".mm", weight(f"{name}.bias")], [out]))
        return out

    def norm(x: str, name: str, out: str) -> str:
        nodes.append(
            node(
                "LayerNormalization",
                [x, weight(f"{name}.weight"), weight(f"{name}.bias")],
                [out],
                axis=-1,
                epsilon=eps,
            )
        )
        return out

    nodes.append(node("Gather", [weight("embeddings.word_embeddings.weight"), "ids"], ["e.w"]))
    nodes.append(
        node("Gather", [weight("embeddings.position_embeddings.weight"), "positions"], ["e.p"])
    )
    nodes.append(
        node("Gather", [weight("embeddings.token_type_embeddings.weight"), "types"], ["e.t"])
    )
    nodes.append(node("Add", ["e.w", "e.p"], ["e.wp"]))
    nodes.append(node("Add", ["e.wp", "e.t"], ["e.sum"]))
    x = norm("e.sum", "embeddings.LayerNorm", "x0")
    split = const("shape.split", np.array([0, 0, heads, size], dtype=np.int64))
    merge = const("shape.merge", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(size), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))
    one = const("one", np.array(1.0, dtype=np.float32))
    root2 = const("root2", np.array(math.sqrt(2.0), dtype=np.float32))
    for layer in range(layers):
        p, L = f"encoder.layer.{layer}.", f"l{layer}."
        for part, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])):
            linear(x, p + "attention.self." + part, L + part)
            nodes.append(node("Reshape", [L + part, split], [L + part + ".r"]))
            nodes.append(node("Transpose", [L + part + ".r"], [L + part + ".h"], perm=perm))
        nodes.append(node("MatMul", [L + "query.h", L + "key.h"], [L + "scores.raw"]))
        nodes.append(node("Mul", [L + "scores.raw", scale], [L + "scores.scaled"]))
        nodes.append(node("Add", [L + "scores.scaled", "bias"], [L + "scores"]))
        nodes.append(node("Softmax", [L + "scores"], [L + "probs"], axis=-1))
        nodes.append(node("MatMul", [L + "probs", L + "value.h"], [L + "ctx.h"]))
        nodes.append(node("Transpose", [L + "ctx.h"], [L + "ctx.t"], perm=[0, 2, 1, 3]))
        nodes.append(node("Reshape", [L + "ctx.t", merge], [L + "ctx"]))
        linear(L + "ctx", p + "attention.output.dense", L + "attn")
        nodes.append(node("Add", [L + "attn", x], [L + "attn.res"]))
        attended = norm(L + "attn.res", p + "attention.output.LayerNorm", L + "attended")
        linear(attended, p + "intermediate.dense", L + "inter")
        nodes.append(node("Div", [L + "inter", root2], [L + "g.z"]))
        nodes.append(node("Erf", [L + "g.z"], [L + "g.erf"]))
        nodes.append(node("Add", [L + "g.erf", one], [L + "g.1p"]))
        nodes.append(node("Mul", [L + "inter", L + "g.1p"], [L + "g.x"]))
        nodes.append(node("Mul", [L + "g.x", half], [L + "gelu"]))
        linear(L + "gelu", p + "output.dense", L + "out")
        nodes.append(node("Add", [L + "out", attended], [L + "out.res"]))
        x = norm(L + "out.res", p + "output.LayerNorm", L + "x")
    nodes.append(node("Identity", [x], ["hidden"]))
    graph = b"".join(_bytes(1, n) for n in nodes) + _str(2, "minilm")
    graph += b"".join(_bytes(5, tensor(name, array)) for name, array in inits.items())
    graph += _bytes(11, value_info("ids", INT64, ["batch", "length"]))
    graph += _bytes(11, value_info("types", INT64, ["batch", "length"]))
    graph += _bytes(11, value_info("positions", INT64, ["length"]))
    graph += _bytes(11, value_info("bias", FLOAT, ["batch", 1, 1, "length"]))
    graph += _bytes(12, value_info("hidden", FLOAT, ["batch", "length", hidden]))
    opset = _bytes(8, _str(1, "") + _int(2, 17))
    return _int(1, 8) + opset + _str(2, "personae-bench") + _bytes(7, graph)


class OnnxMiniLM:
    """Sentence vectors from the ONNX graph: same tokenizer, batches and pooling as the numpy
    model (:class:`personae.memory.minilm.MiniLMEmbedding`), forward pass by onnxruntime."""

    def __init__(self, model: object, threads: int = 1) -> None:
        import onnxruntime

        self._model = model
        config = model._config  # type: ignore[attr-defined]
        data = minilm_graph(model._w, config.layers, config.heads, config.eps)  # type: ignore[attr-defined]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = onnxruntime.InferenceSession(
            data, options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        encodings = self._model._tokenizer.encode_batch(texts)  # type: ignore[attr-defined]
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            chosen = order[start : start + batch]
            vectors[chosen] = self._forward([encodings[i] for i in chosen])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / norms

    def _forward(self, encodings: list[object]) -> np.ndarray:
        length = max(len(e.ids) for e in encodings)  # type: ignore[attr-defined]
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros((len(encodings), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)  # type: ignore[attr-defined]
            ids[row, :n] = encoding.ids  # type: ignore[attr-defined]
            types[row, :n] = encoding.type_ids  # type: ignore[attr-defined]
            mask[row, :n] = 1.0
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        (hidden,) = self._session.run(
            ["hidden"],
            {"ids": ids, "types": types, "positions": np.arange(length), "bias": bias},
        )
        # run() is typed as any output kind (sparse tensors, maps); this graph's is one array.
        summed = (np.asarray(hidden) * mask[:, :, None]).sum(axis=1)
        pooled: np.ndarray = summed / mask.sum(axis=1, keepdims=True)
        return pooled
