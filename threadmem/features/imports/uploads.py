"""API uploads: keep the JSONL, check it is JSONL, import it inline (``run``) or in a task (``tasks``)."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from threadmem.domain.services import CHANNEL_MAX_CHARS
from threadmem.errors import InvalidInput, PayloadTooLarge
from threadmem.features.imports.records import FORMATS, detect_format
from threadmem.features.imports.run import import_run
from threadmem.features.imports.tasks import import_run_task
from threadmem.lib.validate import check_text
from threadmem.models import Import


def _check_jsonl(path: Path) -> None:
    """Every non-blank line a JSON object, at least one of them; else InvalidInput naming the first bad line."""
    seen = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError as exc:
                raise InvalidInput(
                    f"the upload is not JSONL: line {number} is not JSON ({exc})", field="file"
                ) from None
            except RecursionError:
                raise InvalidInput(f"line {number} of the upload nests too deeply to read", field="file") from None
            if not isinstance(record, dict):
                raise InvalidInput(f"the upload is not JSONL: line {number} is not a JSON object", field="file")
            seen += 1
    if not seen:
        raise InvalidInput("the upload is empty: expected JSONL, one record a line", field="file")


def import_upload(
    *, owner: AbstractBaseUser, fmt: str, name: str, chunks: Iterable[bytes], channel: str = ""
) -> Import:
    """Store the upload and create its Import; run it now if small, else enqueue its task after commit.

    Whatever refuses the upload (its size, its lines, its channel, an error of the import itself)
    deletes the stored file: only an Import waiting for its task keeps one. Without ``fmt`` the format
    is read from the first record (Claude Code's when it names no other).
    """
    if fmt and fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    channel = check_text(channel, name="channel", max_chars=CHANNEL_MAX_CHARS)
    # The file's name is only shown back: keep what can be stored of it rather than refuse the upload.
    name = name.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")[:1000]
    folder = Path(settings.THREADMEM_IMPORT_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{secrets.token_hex(12)}.jsonl"
    queued = False
    try:
        size = _write(path, chunks)
        _check_jsonl(path)
        fmt = fmt or detect_format(path) or "claude-code"
        record = Import.objects.create(owner=owner, format=fmt, name=name, path=str(path), size=size, channel=channel)
        if size <= settings.IMPORT_INLINE_MAX_BYTES:
            import_run(import_id=record.pk, raise_errors=True)
        else:
            transaction.on_commit(lambda: import_run_task.delay(record.pk))
            queued = True
    finally:
        if not queued:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
    record.refresh_from_db()
    return record


def _write(path: Path, chunks: Iterable[bytes]) -> int:
    """Write the upload to ``path``; PayloadTooLarge past THREADMEM_IMPORT_MAX_BYTES."""
    limit = settings.THREADMEM_IMPORT_MAX_BYTES
    size = 0
    with path.open("wb") as handle:
        for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(
                    f"the upload is over {limit} bytes, the limit (THREADMEM_IMPORT_MAX_BYTES)", field="file"
                )
            handle.write(chunk)
    return size
