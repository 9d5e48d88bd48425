"""A BERT sentence encoder as an ONNX graph, built in memory from ``safetensors`` weights.

The graph is the forward pass of a Hugging Face ``BertModel`` (absolute positions, one token
type, post-LayerNorm, exact erf GELU) followed by sentence-transformers' mean pooling over the
attention mask and L2 normalisation: it takes ``input_ids`` and ``attention_mask`` (int64,
``[batch, tokens]``) and returns ``embedding`` (float32, ``[batch, hidden]``, unit length). It
runs on onnxruntime, so a sentence encoder whose package ships only its weights needs no torch.

Nothing here downloads anything: the weights are read from a local file.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_mnemon.errors import ProviderError

__all__ = ["build_bert_encoder", "read_safetensors"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
_OPSET = 18  # LayerNormalization, and axes as inputs of every Reduce*


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file (8-byte header length, JSON header, raw data).

    Args:
        path: The file.

    Returns:
        Name -> array (a view of one read of the file).

    Raises:
        ProviderError: The file is missing, cut short or of an unknown layout.
    """
    try:
        raw = Path(path).read_bytes()
        (size,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + size])
    except (OSError, struct.error, ValueError) as exc:
        raise ProviderError(f"cannot read the weights {path}: {exc}") from None
    body = memoryview(raw)[8 + size :]
    tensors: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(meta.get("dtype"))
        start, end = meta["data_offsets"]
        if dtype is None or end > len(body):
            raise ProviderError(f"the weights {path} hold an unreadable tensor {name!r}")
        tensors[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(meta["shape"])
    return tensors


class _Graph:
    """Collects nodes and initializers while the encoder is laid out."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.weights = weights
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._count = 0

    def const(self, value: Any, dtype: Any = np.float32) -> str:
        name = f"c{len(self.inits)}"
        array = np.asarray(value, dtype=dtype)
        self.inits.append(self.numpy_helper.from_array(array, name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        array = self.weights[key].astype(np.float32)
        return self.const(np.ascontiguousarray(array.T if transpose else array))

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"t{self._count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def dense(self, x: str, prefix: str) -> str:
        product = self.op("MatMul", x, self.weight(f"{prefix}.weight", transpose=True))
        return self.op("Add", product, self.weight(f"{prefix}.bias"))

    def norm(self, x: str, prefix: str, eps: float) -> str:
        scale, bias = self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def _embeddings(g: _Graph, eps: float) -> str:
    words = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids", axis=0)
    length = g.op("Gather", g.op("Shape", "input_ids"), g.const(1, np.int64), axis=0)
    positions = g.op("Range", g.const(0, np.int64), length, g.const(1, np.int64))
    placed = g.op("Gather", g.weight("embeddings.position_embeddings.weight"), positions, axis=0)
    # Every token has type 0 (single sentences), so its type embedding is one constant row.
    token_type = g.const(g.weights["embeddings.token_type_embeddings.weight"][0])
    summed = g.op("Add", g.op("Add", words, placed), token_type)
    return g.norm(summed, "embeddings.LayerNorm", eps)


def _attention(g: _Graph, x: str, prefix: str, heads: int, head_dim: int, bias: str) -> str:
    split = g.const([0, 0, heads, head_dim], np.int64)

    def project(name: str, perm: list[int]) -> str:
        shaped = g.op("Reshape", g.dense(x, f"{prefix}.self.{name}"), split)
        return g.op("Transpose", shaped, perm=perm)

    query = project("query", [0, 2, 1, 3])
    key = project("key", [0, 2, 3, 1])
    value = project("value", [0, 2, 1, 3])
    scores = g.op("Mul", g.op("MatMul", query, key), g.const(1.0 / math.sqrt(head_dim)))
    probs = g.op("Softmax", g.op("Add", scores, bias), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, value), perm=[0, 2, 1, 3])
    merged = g.op("Reshape", context, g.const([0, 0, heads * head_dim], np.int64))
    return g.dense(merged, f"{prefix}.output.dense")


def _layer(g: _Graph, x: str, index: int, config: dict[str, Any], bias: str) -> str:
    prefix, eps = f"encoder.layer.{index}", float(config["layer_norm_eps"])
    heads = int(config["num_attention_heads"])
    head_dim = int(config["hidden_size"]) // heads
    attended = _attention(g, x, f"{prefix}.attention", heads, head_dim, bias)
    x = g.norm(g.op("Add", attended, x), f"{prefix}.attention.output.LayerNorm", eps)
    inner = g.dense(x, f"{prefix}.intermediate.dense")
    # Exact GELU, as BERT's "gelu": 0.5 * x * (1 + erf(x / sqrt(2))).
    erf = g.op("Erf", g.op("Mul", inner, g.const(1.0 / math.sqrt(2.0))))
    gelu = g.op("Mul", g.op("Mul", inner, g.op("Add", erf, g.const(1.0))), g.const(0.5))
    out = g.dense(gelu, f"{prefix}.output.dense")
    return g.norm(g.op("Add", out, x), f"{prefix}.output.LayerNorm", eps)


def _mean_pool(g: _Graph, hidden: str, mask: str) -> str:
    weights = g.op("Unsqueeze", mask, g.const([2], np.int64))
    total = g.op("ReduceSum", g.op("Mul", hidden, weights), g.const([1], np.int64), keepdims=0)
    count = g.op("ReduceSum", weights, g.const([1], np.int64), keepdims=0)
    mean = g.op("Div", total, g.op("Max", count, g.const(1e-9)))
    length = g.op("ReduceL2", mean, g.const([1], np.int64), keepdims=1)
    return g.op("Div", mean, g.op("Max", length, g.const(1e-12)))


def build_bert_encoder(weights: dict[str, np.ndarray], config: dict[str, Any]) -> bytes:
    """The serialized ONNX model of a BERT encoder with mean pooling and L2 normalisation.

    Args:
        weights: The ``BertModel`` tensors (names as Hugging Face saves them).
        config: The model's ``config.json`` (hidden size, heads, layers, LayerNorm epsilon).

    Returns:
        The model's bytes, for ``onnxruntime.InferenceSession``.

    Raises:
        ProviderError: The ``onnx`` package is missing or a tensor the layout needs is absent.
    """
    try:
        from onnx import TensorProto, helper
    except ImportError:
        raise ProviderError(
            "the MiniLM embedder builds its graph with the 'onnx' package: "
            "pip install 'onnx>=1.17,<2'"
        ) from None
    g = _Graph(weights)
    try:
        mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
        # Padded keys get a large negative score: their softmax weight is 0.
        blocked = g.op("Sub", g.const(1.0), g.op("Unsqueeze", mask, g.const([1, 2], np.int64)))
        bias = g.op("Mul", blocked, g.const(-1e4))
        hidden = _embeddings(g, float(config["layer_norm_eps"]))
        for index in range(int(config["num_hidden_layers"])):
            hidden = _layer(g, hidden, index, config, bias)
        pooled = _mean_pool(g, hidden, mask)
    except KeyError as exc:
        raise ProviderError(f"the encoder weights lack the tensor {exc}") from None
    g.nodes.append(helper.make_node("Identity", [pooled], ["embedding"]))
    graph = helper.make_graph(
        g.nodes,
        "bert_mean_pooled",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", "hidden"])],
        initializer=g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    model.ir_version = 8  # what onnxruntime releases since 1.14 read
    return model.SerializeToString()
