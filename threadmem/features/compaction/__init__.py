"""Compaction: generations, the ten-section summary and the resource catalogue (contract §4).

``summary.py`` writes the summary (``catalogue.py`` its section 10),
``compacting.py`` requests, claims and commits, ``selectors.py`` reads,
``tasks.py`` is the Celery task.
"""
