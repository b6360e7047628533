"""MiniLM's int8 ONNX graph, rewritten in memory to compute on int8.

The packaged model keeps each weight as int8 and turns it into floats in the
graph (``Cast``, then ``Mul`` by its scale). onnxruntime's optimizer folds
those into float copies of every weight (the process holds the model four
times over); unoptimized, it converts them again on every call. Rewritten, a ``MatMul``
quantizes its input on the fly and multiplies int8 by int8
(``DynamicQuantizeLinear``, ``MatMulInteger``, then the two scales) and an
embedding table is read as int8 rows, each scaled as it is gathered: no
float copy of a weight is ever made, and the vectors stay the float graph's
but for rounding (the figures:
docs/benchmarks.md, "The sentence model, the default").
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def rewritten(path: str) -> bytes:
    """The model at ``path``, its weights' float conversions rewritten to int8 arithmetic, serialized."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(path)
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    replaced: dict[int, list[Any]] = {}
    for cast in [n for n in graph.node if n.op_type == "Cast" and n.input[0] in initializers]:
        (mul,) = consumers[cast.output[0]]
        weight = mul.output[0]
        uses = consumers.get(weight, [])
        if mul.op_type != "Mul" or not uses or not all(_reads_weight(use, weight) for use in uses):
            continue  # a shape this rewrite does not know: left as it is
        int8 = cast.input[0]
        scale = next(name for name in mul.input if name != cast.output[0])
        replaced[id(cast)] = replaced[id(mul)] = []
        for k, use in enumerate(uses):
            tag = f"{weight}.int8.{k}"
            if use.op_type == "MatMul":
                replaced[id(use)] = [
                    helper.make_node("DynamicQuantizeLinear", [use.input[0]], [f"{tag}.x", f"{tag}.xs", f"{tag}.xz"]),
                    helper.make_node("MatMulInteger", [f"{tag}.x", int8, f"{tag}.xz"], [f"{tag}.i"]),
                    helper.make_node("Cast", [f"{tag}.i"], [f"{tag}.f"], to=TensorProto.FLOAT),
                    helper.make_node("Mul", [f"{tag}.f", f"{tag}.xs"], [f"{tag}.fx"]),
                    helper.make_node("Mul", [f"{tag}.fx", scale], list(use.output)),
                ]
            else:  # a Gather of table rows, each row with its own scale
                replaced[id(use)] = [
                    helper.make_node("Gather", [int8, use.input[1]], [f"{tag}.rows"], axis=0),
                    helper.make_node("Gather", [scale, use.input[1]], [f"{tag}.scales"], axis=0),
                    helper.make_node("Cast", [f"{tag}.rows"], [f"{tag}.f"], to=TensorProto.FLOAT),
                    helper.make_node("Mul", [f"{tag}.f", f"{tag}.scales"], list(use.output)),
                ]
    nodes = [new for node in graph.node for new in replaced.get(id(node), [node])]
    del graph.node[:]
    graph.node.extend(_without_nan_guards(nodes))
    return model.SerializeToString()


def _without_nan_guards(nodes: list[Any]) -> list[Any]:
    """The nodes with each attention softmax's NaN guard (``Where(IsNaN(p), 0, p)``) dropped: its readers read ``p``.

    The guard zeroes a row whose every word piece is masked out; MiniLM embeds one text a pass with every word
    piece attended (``minilm._forward``), so no row ever is, and the guard only cost two passes over every
    attention score.
    """
    produced_by = {output: node for node in nodes for output in node.output}
    read_by = Counter(name for node in nodes for name in node.input)
    guarded: dict[str, str] = {}  # the guard's output -> the softmax output it guards
    dropped: set[int] = set()
    for node in nodes:
        if node.op_type != "Where":
            continue
        check, source = produced_by.get(node.input[0]), produced_by.get(node.input[2])
        if (
            check is not None
            and check.op_type == "IsNaN"
            and check.input[0] == node.input[2]
            and read_by[check.output[0]] == 1
            and source is not None
            and source.op_type == "Softmax"
        ):
            guarded[node.output[0]] = node.input[2]
            dropped.update((id(node), id(check)))
    kept = [node for node in nodes if id(node) not in dropped]
    for node in kept:
        for index, name in enumerate(node.input):
            if name in guarded:
                node.input[index] = guarded[name]
    return kept


def _reads_weight(node: Any, weight: str) -> bool:
    if node.op_type == "MatMul":
        return node.input[1] == weight
    return node.op_type == "Gather" and node.input[0] == weight and _attribute(node, "axis", 0) == 0


def _attribute(node: Any, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)
