"""``python -m tests.mcp.providers``: ``manage.py mcp`` whose "Other memory results" is far more text than the cap.

A child process cannot be patched from the test, so it patches itself before the server starts.
"""

from __future__ import annotations

import os
import sys
from typing import Any

LONG_OTHER_RESULTS = "--- messageId=0 similarity=0.99\n" + "a close match in meaning " * 1_000


def long_other_results(*, scope: Any, query: str, terms: list[str]) -> str:
    return LONG_OTHER_RESULTS


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import execute_from_command_line

    from tests.support.semantic import lane_replaced

    with lane_replaced(long_other_results):
        execute_from_command_line([sys.argv[0], "mcp"])


if __name__ == "__main__":
    main()
