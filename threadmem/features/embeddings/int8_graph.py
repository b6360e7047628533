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
    graph.node.extend(nodes)
    return model.SerializeToString()


def _reads_weight(node: Any, weight: str) -> bool:
    if node.op_type == "MatMul":
        return node.input[1] == weight
    return node.op_type == "Gather" and node.input[0] == weight and _attribute(node, "axis", 0) == 0


def _attribute(node: Any, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)
