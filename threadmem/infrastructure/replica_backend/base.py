"""PostgreSQL's backend for a streaming replica (``DATABASES["replicaN"]["ENGINE"]``, config/settings.py).

A replica that stops answering fails the first statement on a connection
kept open (``replicas.health`` watches its statements), but a connection opened after it
went down fails before any statement, in whichever thread opens it: the
ranked lane's worker thread, which answers for itself instead of raising, or
the request's after a health check closed its kept one. Here that failure is
the replica's too: it is passed over, and the read it served runs again on
the primary.
"""

from __future__ import annotations

from django.db.backends.postgresql import base

from threadmem.infrastructure.replicas import unreachable


class DatabaseWrapper(base.DatabaseWrapper):
    def connect(self) -> None:
        try:
            super().connect()
        except self.Database.Error:
            unreachable(self.alias)
            raise
