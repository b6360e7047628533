"""The redaction tests' surfaces: an export's lines uploaded (a restore), and what a user reads of a thread, each
surface's answer as text: the API's detail, listings and export, the console's pages, searches in the thread and
global."""

from __future__ import annotations

import json
from urllib.parse import quote

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.support.factories import console_client
from threadmem.models import Thread


def upload_export(api, lines: list[dict]) -> dict:
    """Restore the export ``lines`` through the API's upload; its answer."""
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    response = api.post("/api/v1/imports/", {"file": SimpleUploadedFile("export.jsonl", body)}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()


def api_search(api, query: str, channel: str | None = None) -> dict:
    body = {"query": query} if channel is None else {"query": query, "channel": channel}
    response = api.post("/api/v1/search/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def api_reads(api, thread: Thread) -> dict[str, str]:
    """The thread's detail, the thread list, its messages and its export, as the owner's client reads them."""
    base = f"/api/v1/threads/{quote(thread.channel)}/"
    reads = {}
    for name, url in (("detail", base), ("list", "/api/v1/threads/"), ("messages", f"{base}messages/")):
        response = api.get(url)
        assert response.status_code == 200, (url, response.content)
        reads[name] = response.content.decode()
    response = api.get(f"{base}export/")
    assert response.status_code == 200, response
    reads["export"] = b"".join(response.streaming_content).decode()
    return reads


def console_reads(staff, thread: Thread, *, query: str | None = None) -> dict[str, str]:
    """The console's thread list and thread page, and with ``query`` its search, global and in the thread."""
    client = console_client(staff)
    pages = {"threads": reverse("console:threads"), "thread": reverse("console:thread", args=[thread.id])}
    if query is not None:
        search = reverse("console:search")
        pages["search"] = f"{search}?q={quote(query)}"
        pages["thread search"] = f"{search}?q={quote(query)}&channel={quote(thread.channel)}"
    reads = {}
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        reads[name] = response.content.decode()
    return reads


def holding(text_by_read: dict[str, str], secret: str) -> list[str]:
    """The reads ``secret`` is in, as it was written or JSON-escaped."""
    escaped = json.dumps(secret)[1:-1]
    return [name for name, text in text_by_read.items() if secret in text or escaped in text]
