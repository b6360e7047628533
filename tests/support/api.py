"""REST test helpers: the thread and message endpoints' URLs, a Slack channel, a tool call."""

from __future__ import annotations

SLACK = "slack:C042/1700000000.1"
MESSAGES = f"/api/v1/threads/{SLACK}/messages/"
GOOD = {"role": "user", "content": "fine"}
SHELL_CALL = {
    "id": "call_1",
    "name": "shell",
    "arguments": {"command": "ssh deploy@staging-7.example.net 'systemctl status api'"},
}


def url(channel: str = "", suffix: str = "") -> str:
    return f"/api/v1/threads/{channel}/{suffix}" if channel else "/api/v1/threads/"
