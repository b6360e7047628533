"""Squashed: moved threadmem_search to 1.1 (``threadmem_tokens``); no deployment holds a version before 1.3.

Migration 0007 creates the extension at the server's version (2.0) and 0022
builds the token index and moves a database at 1.3 to 2.0 (docs/changelog.md).
"""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0013_thread_source_db_default")]

    operations = []
