"""Tool-call arguments stored with an integer outside 64 bits hold it as a string from now on.

Appends refuse such integers (``lib/storable.json_problem``), but rows stored
before did not, and orjson (the message listing's renderer) cannot write
them. The renderer falls back for them too; this rewrites the stored value so
that every reader, the JSON exports included, gets the same text.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import TextField
from django.db.models.functions import Cast

# What orjson writes (threadmem/lib/storable.py), written out: a migration keeps the rule of its day.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
# An integer outside 64 bits has at least 19 digits: only those rows are read.
LONG_DIGITS = r"[0-9]{19}"


def _ints_as_text(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if INT_MIN <= value <= INT_MAX else str(value)
    if isinstance(value, dict):
        return {key: _ints_as_text(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_ints_as_text(child) for child in value]
    return value


def forward(apps, schema_editor):
    Message = apps.get_model("threadmem", "Message")
    candidates = (
        Message.objects.using(schema_editor.connection.alias)
        .annotate(calls_text=Cast("tool_calls", TextField()))
        .filter(calls_text__regex=LONG_DIGITS)
        .values_list("pk", "tool_calls")
    )
    for pk, tool_calls in candidates.iterator(chunk_size=500):
        rewritten = _ints_as_text(tool_calls)
        if rewritten != tool_calls:
            Message.objects.using(schema_editor.connection.alias).filter(pk=pk).update(tool_calls=rewritten)


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0019_capture_cursor")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
