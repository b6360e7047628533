"""Recovery from workers that die mid-compaction, on every broker.

A running claim carries a short lease that a heartbeat renews while its
attempt works (``lease.claim_heartbeat``). A worker killed outright stops renewing,
and ``compaction_sweep`` (a Celery beat task, every
COMPACTION_SWEEP_SECONDS) sends every live compaction whose lease ran
out to a worker again, under its own task id; the next attempt takes the
expired claim over (``compacting.compaction_claim``). So a compaction stalls for
about one lease plus one sweep, not for the broker's redelivery delay (Redis
hands an unacknowledged task out again only after its visibility timeout,
an hour by default). Duplicate deliveries are harmless: one claim wins.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from threadmem.errors import ServiceUnavailable
from threadmem.features.compaction import compacting
from threadmem.features.compaction.claim import LIVE, looks_abandoned
from threadmem.models import Compaction

logger = logging.getLogger(__name__)


def compaction_sweep() -> int:
    """Send every live compaction nobody is working on to a worker again; answer how many were sent.

    Nobody works on a running claim whose lease ran out (its holder died) or
    on a pending one whose task message was lost; ``claim.looks_abandoned``
    says which.
    """
    now = timezone.now()
    sent = 0
    for compaction in Compaction.objects.filter(status__in=LIVE).order_by("id"):
        if not looks_abandoned(compaction, now):
            continue
        try:
            compacting.compaction_send(compaction)
        except ServiceUnavailable:
            logger.warning("compaction sweep: the broker is unreachable; the next sweep tries again")
            break
        logger.info(
            "compaction %s of thread %s sent again: nobody was working on it", compaction.pk, compaction.thread_id
        )
        sent += 1
    return sent
