"""Model-facing reads on PostgreSQL streaming replicas (``DATABASE_REPLICA_URLS``; docs/scaling.md).

- ``rule``: the one rule every entry point applies (``read``, ``model_facing_read``, ``choose``);
- ``middleware``: the rule over HTTP (REST and the console);
- ``state``: the read state a read's threads share;
- ``positions``: what a replica must have replayed, the caller's last write (``wrote``) and the fence (``fence``);
- ``health``: whether a replica answers, how far behind it is, whether its host loads its catalog's libraries;
- ``router``: the ORM's half (``ReplicaRouter``).

The raw SQL of a read reaches the chosen database through Django's router (``threadmem.domain.db.reading``): the
modules that run it never name a replica. A replica's database backend (``threadmem.infrastructure.
replica_backend``) reports a connection that fails to open (``unreachable``). Without replicas nothing here runs:
no statement, no cache lookup, no router.
"""

from __future__ import annotations

from threadmem.infrastructure.replicas.health import unreachable
from threadmem.infrastructure.replicas.positions import fence, wrote
from threadmem.infrastructure.replicas.rule import alias, model_facing_read, read, runs_again
from threadmem.infrastructure.replicas.state import aliases

__all__ = ["alias", "aliases", "fence", "model_facing_read", "read", "runs_again", "unreachable", "wrote"]
