"""The record every deletion leaves (who, what, how much; never content), and the process's kept indexes."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from threadmem.features.search.ranked import lexicon, spread, vectors
from threadmem.models import Deletion


def deletion_record(
    *,
    kind: str,
    actor: AbstractBaseUser | None,
    owner_name: str,
    counts: dict[str, object],
    surface: str,
    channel: str = "",
    message_id: int | None = None,
    actor_name: str = "",
) -> Deletion:
    return Deletion.objects.create(
        kind=kind,
        actor=actor if actor is not None and actor.pk else None,
        actor_name=actor.get_username() if actor is not None and actor.pk else actor_name or surface,
        owner_name=owner_name,
        channel=channel,
        message_id=message_id,
        counts=counts,
        surface=surface,
    )


def forget_kept() -> None:
    """Drop what this process keeps for the ranked lane.

    Every search reads its scope's pieces from the database, so a removed
    piece is never shown from what a process keeps. SQLite may hand a removed
    row's id to the next row, though: a kept vector or keyword entry must not
    answer for it.
    """
    vectors.clear()
    lexicon.clear()
    spread.clear()
