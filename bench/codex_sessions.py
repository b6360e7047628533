"""Codex rollouts for the import bench: the shared Claude Code sessions written again as Codex CLI writes them.

No public Codex rollout comes near the shared sessions' size, so the bench
compares the two importers on the same conversations, written as rollouts by
``tests/support/session_files.py`` (``write_rollouts``). The Claude Code side
reads the originals; both store their messages through the same path.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.session_files import write_rollouts


def codex_throughput(
    *, claude_files: list[Path], folder: Path, runs: int, repeat: int, user: Any, cleanup: Callable[[], None]
) -> float:
    """Import the sessions and their rollouts, taking turns; print messages/s of each, answer codex/claude-code."""
    from threadmem.features.imports.file_import import FileImport
    from threadmem.features.imports.import_once import statistics_refresh
    from threadmem.features.imports.report import ImportReport

    codex_files = write_rollouts(claude_files, folder)
    sides = {"claude-code": claude_files, "codex": codex_files}
    print(
        f"codex: the same {len(claude_files)} sessions as Codex rollouts"
        f" ({sum(p.stat().st_size for p in codex_files) / 1024 / 1024:.1f} MB), imported beside the originals"
    )
    ratios: list[float] = []
    for run in range(runs):
        rates, counts = {}, {}
        for side in sorted(sides, reverse=run % 2 == 1):
            messages, started = 0, time.perf_counter()
            for time_around in range(repeat):
                report = ImportReport()
                for path in sides[side]:
                    channel = f"bench:import:codex:{run}:{time_around}:{side}:{path.stem}"
                    FileImport(path=path, fmt=side, owner=user, report=report, channel=channel).step(final=True)
                statistics_refresh()
                messages += report.messages_new
            rates[side] = messages / (time.perf_counter() - started)
            counts[side] = messages // repeat
        ratios.append(rates["codex"] / rates["claude-code"])
        print(
            f"  run {run + 1}: codex {rates['codex']:,.0f} messages/s ({counts['codex']} messages)"
            f" · claude-code {rates['claude-code']:,.0f} messages/s ({counts['claude-code']} messages)"
            f" · codex/claude-code {ratios[-1]:.2f}"
        )
        cleanup()
    ratio = statistics.median(ratios)
    print(f"{'meets' if ratio >= 0.8 else 'BELOW'} the target codex/claude-code >= 0.80 ({ratio:.2f})")
    return ratio
