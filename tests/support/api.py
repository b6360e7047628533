"""REST test helpers: the thread endpoints' URLs and a Slack channel."""

from __future__ import annotations

SLACK = "slack:C042/1700000000.1"


def url(channel: str = "", suffix: str = "") -> str:
    return f"/api/v1/threads/{channel}/{suffix}" if channel else "/api/v1/threads/"
