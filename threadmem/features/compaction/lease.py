"""A running claim's short lease and the heartbeat that renews it (compaction/recovery.py says why)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from threadmem.models import Compaction

logger = logging.getLogger(__name__)


def heartbeat_lease() -> timedelta:
    """How long a claim renewed by a heartbeat is trusted without news from its holder."""
    return timedelta(seconds=settings.COMPACTION_LEASE)


@contextlib.contextmanager
def claim_heartbeat(*, compaction_id: int, token: str, lease: timedelta) -> Iterator[None]:
    """Renew the claim's lease every quarter lease while the block runs (a thread of its own, its own connection)."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(lease.total_seconds() / 4):
                renewed = Compaction.objects.filter(
                    pk=compaction_id, status=Compaction.Status.RUNNING, claimed_by=token
                ).update(lease_expires_at=timezone.now() + lease)
                if not renewed:  # finished, or taken over: nothing left to keep alive
                    return
        except Exception:
            logger.exception("heartbeat of compaction %s stopped", compaction_id)
        finally:
            connection.close()

    beating = threading.Thread(target=beat, name=f"compaction-{compaction_id}-heartbeat", daemon=True)
    beating.start()
    try:
        yield
    finally:
        stop.set()
        beating.join()
