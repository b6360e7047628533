"""The sentence model: MiniLM and the Universal Sentence Encoder side by side, in one vector.

Each text's two unit vectors (``minilm.py``, 384 dimensions; ``universal.py``,
512) are joined, each scaled by the square root of its share, so the joined
vector is a unit vector whose cosine to another is the two models' cosines
averaged. Stored and ranked as one model's vectors (``Chunk.model`` =
``SENTENCE_MODEL``), so nothing downstream knows there are two. The two rank
differently enough that the pair finds more than either alone
(docs/benchmarks.md, "The sentence model, the default").

Loaded once per process: an embedding run loads it where it runs (a worker
waits); a search starts loading it on a background thread
(``start_loading``) and ranks by keyword until it is ``ready``
(``search/ranked/lane.py``).
"""

from __future__ import annotations

import logging
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from threadmem.features.embeddings import minilm, universal

SENTENCE_MODEL = "all-MiniLM-L6-v2+USE-multilingual-v3"
SENTENCE_DIMENSIONS = minilm.MINILM_DIMENSIONS + universal.UNIVERSAL_DIMENSIONS
# MiniLM's share of the joined cosine (the rest is the encoder's), tuned on LoCoMo's tune half.
MINILM_SHARE = 0.5
# The joined vector's parts: (width, share of the cosine), in order (search/ranked/common.py reads each apart).
PARTS = ((minilm.MINILM_DIMENSIONS, MINILM_SHARE), (universal.UNIVERSAL_DIMENSIONS, 1 - MINILM_SHARE))

logger = logging.getLogger(__name__)

# MiniLM's half of a query, run beside the encoder's (a few queries at once: more would only queue for the cores).
_beside = ThreadPoolExecutor(max_workers=4, thread_name_prefix="threadmem-minilm")
_loading: threading.Thread | None = None
_starting = threading.Lock()  # a search never waits for a load another thread runs
_failed = False  # the background load raised (a broken install): not retried in this process


def available() -> bool:
    """Whether both halves' packages are installed."""
    return minilm.available() and universal.available()


def load() -> None:
    """Both halves, loaded in this thread."""
    minilm.model()
    universal.model()


def ready() -> bool:
    """Whether both halves are loaded in this process."""
    return minilm.ready() and universal.ready()


def failed() -> bool:
    """Whether the background load failed in this process."""
    return _failed


def start_loading() -> None:
    """Load the model on a background thread, once a process (a no-op once it is loaded or loading)."""
    global _loading
    if ready() or _loading is not None:
        return
    with _starting:
        if _loading is None:
            _loading = threading.Thread(target=_load_logged, name="threadmem-sentence-load", daemon=True)
            _loading.start()


def _load_logged() -> None:
    global _failed
    try:
        load()
    except Exception:  # a broken install: searches keep ranking by keyword, the log says why
        _failed = True
        logger.exception("the sentence model did not load")


def embed(texts: list[str]) -> list[list[float]]:
    """One unit vector per text, in order (an empty text gets a zero vector: no direction, never a match)."""
    if not texts:
        return []
    # A search's query, once both halves are loaded: both at once (both leave the GIL), it waits for the slower.
    # Never while loading: a half importing its native library beside the other's scan of the loaded ones
    # deadlocks the process (the loader's lock and the GIL, each waiting for the other).
    if len(texts) == 1 and ready():
        pending = _beside.submit(minilm.embed, texts)
        second = universal.embed(texts)
        first = pending.result()
    else:  # several texts (a worker's batch) stay on one core
        first, second = minilm.embed(texts), universal.embed(texts)
    joined = np.concatenate([math.sqrt(MINILM_SHARE) * first, math.sqrt(1 - MINILM_SHARE) * second], axis=1)
    return joined.tolist()
