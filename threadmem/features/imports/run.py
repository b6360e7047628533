"""Running one Import: claim it, import its file, record the outcome, delete the file.

The upload (``uploads``) runs it inline and the task (``tasks``) in a worker; both call it here,
so neither imports the other's module back.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from django.utils import timezone

from threadmem.domain.redaction import text_redacted
from threadmem.errors import DomainError
from threadmem.features.imports.import_once import import_paths
from threadmem.features.imports.report import MAX_REPORTED_PROBLEMS
from threadmem.infrastructure import replicas
from threadmem.models import Import


def import_run(*, import_id: int, raise_errors: bool = False) -> None:
    """Claim the pending import, run it, record the outcome; a vanished or claimed one exits quietly."""
    if not Import.objects.filter(pk=import_id, status=Import.Status.PENDING).update(status=Import.Status.RUNNING):
        return
    record = Import.objects.select_related("owner").get(pk=import_id)
    outcome: dict[str, object] = {"status": Import.Status.SUCCEEDED}
    try:
        report = import_paths(
            paths=[Path(record.path)],
            fmt=record.format,
            owner=record.owner,
            channel=record.channel or None,
            source_path=f"upload:{record.name or record.pk}",
        )
        outcome.update(
            channels=report.channels,
            lines_read=report.lines,
            lines_skipped=report.skipped,
            messages_imported=report.messages_new,
            messages_known=report.messages_known,
            # A restored export's notes (a fork restored as a plain thread) are shown with the problems.
            errors=(report.problems + report.notes)[:MAX_REPORTED_PROBLEMS],
        )
        if report.refusals:
            # An export refused whole stored nothing: the import failed, whatever else it read.
            refusal = report.refusals[0]
            raise type(refusal)(f"{refusal.message} (import {record.pk})", field="file")
    except DomainError as exc:
        # The reason may quote what the upload held (an export's channel), as a problem may.
        outcome.update(status=Import.Status.FAILED, error=text_redacted(exc.message))
        if raise_errors:
            _finish(record, outcome)
            raise
    except Exception:
        # A defect, not the upload's fault: the Import says it failed (never stays running) and the error goes on.
        _finish(
            record, {"status": Import.Status.FAILED, "error": "the import failed on an internal error; it is logged"}
        )
        raise
    _finish(record, outcome)


def _finish(record: Import, outcome: dict[str, object]) -> None:
    # The owner's reads wait for a replica that has replayed what was imported (a failed import may have stored
    # some), in whichever process it ran: the position is kept in the cache every process shares. Recorded
    # before the import reads as finished, so that whoever sees it finished searches after it.
    replicas.wrote(record.owner_id)
    Import.objects.filter(pk=record.pk).update(finished_at=timezone.now(), path="", **outcome)
    with contextlib.suppress(OSError):
        Path(record.path).unlink(missing_ok=True)
