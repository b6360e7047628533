"""The ranked lane: the default "Other memory results" (contract §12).

- ``keyword.py``: keyword relevance from the database's full-text engine;
- ``lane.py``: meaning (``embeddings/retrieve.py``), the fusion, the entries;
- ``share.py``: how the 12,000 characters are shared with the literal part.
"""

from threadmem.features.search.ranked.lane import RankedText, ranked_results
from threadmem.features.search.ranked.share import DESCRIBED_LITERAL_MAX_CHARS, fit

__all__ = ["DESCRIBED_LITERAL_MAX_CHARS", "RankedText", "fit", "ranked_results"]
