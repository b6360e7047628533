"""The embedded static embedding model: WordLlama's 256-dimension model, shipped inside its wheel.

With no embedding model server configured, the ranked lane of "Other memory
results" (contract §12) ranks by meaning with this one. Its weights and tokenizer
sit in the installed ``wordllama`` package (``wordllama/weights``,
``wordllama/tokenizers``); ``WordLlama.load`` looks there first, and with
``disable_download=True`` it raises instead of ever reaching the network.

Loaded once per process, on first use (a few hundred milliseconds), under a
lock: a search and an embedding run may ask for it at the same moment.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import numpy as np

# The name its vectors are stored under (``Chunk.model``); a configured model
# stores under its own name, so the two never mix.
STATIC_MODEL = "wordllama:l2_supercat-256"
STATIC_DIMENSIONS = 256
# Texts per call into the model (its own batching is by 64).
EMBED_BATCH = 512

_lock = threading.Lock()
_model: Any = None


def available() -> bool:
    """Whether the wordllama package is installed."""
    return importlib.util.find_spec("wordllama") is not None


def package_folder() -> Path:
    import wordllama

    return Path(wordllama.__file__).resolve().parent


def model() -> Any:
    """The loaded model (WordLlamaInference), from the installed package only."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from wordllama import WordLlama

                _model = WordLlama.load(
                    config="l2_supercat", dim=STATIC_DIMENSIONS, cache_dir=package_folder(), disable_download=True
                )
    return _model


def embed(texts: list[str]) -> list[list[float]]:
    """One unit vector per text, in order (an empty text gets a zero vector: no direction, never a match)."""
    if not texts:
        return []
    loaded = model()
    vectors: list[np.ndarray] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = texts[start : start + EMBED_BATCH]
        with np.errstate(invalid="ignore", divide="ignore"):  # an empty text: 0/0, made a zero vector below
            vectors.append(np.asarray(loaded.embed(batch, norm=True), dtype=np.float32))
    matrix = np.nan_to_num(np.concatenate(vectors), nan=0.0)
    return matrix.tolist()
