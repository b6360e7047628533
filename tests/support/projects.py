"""Two projects with the same words: each surface's project tests search them, and each must find only its own."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from tests.support.factories import append, make_thread
from threadmem.models import Thread

APP = "/home/dev/src/app"
SHOP = "/home/dev/src/shop"
WORDS = "the zebrafish migration failed"


def two_projects(owner: AbstractBaseUser, other: AbstractBaseUser) -> tuple[list[Thread], dict[str, int]]:
    """The owner's threads in APP and SHOP and another owner's in APP, each holding WORDS; their message ids by
    channel."""
    threads = [
        make_thread(owner, "claude-code:app", project=APP),
        make_thread(owner, "claude-code:shop", project=SHOP),
        make_thread(other, "claude-code:foreign", project=APP),
    ]
    ids = {}
    for thread in threads:
        (ids[thread.channel],) = append(thread, {"role": "user", "content": WORDS})
    return threads, {channel: message.id for channel, message in ids.items()}
