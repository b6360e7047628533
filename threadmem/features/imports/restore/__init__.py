"""Restoring a thread from threadmem's own export (``export.py``): the same channel, generations and messages.

Messages are stored through ``services.messages_store`` (so every ingest rule applies to them) in seq
order, each run of one generation at the seq it was exported with: the thread's ``next_seq`` and
``current_generation`` are set before each run, which keeps seq gaps (an erased message) and late
arrivals a compaction moved to the next generation where they were. What the append path does not
take (timestamps, ``isolated``, ``superseded_by``, ``summary_origin``, a generation's summary and
state) is written after, in the same transaction: a thread is restored whole or not at all. A file with
any line that cannot be restored as exported is refused whole, every such line listed: a restore that
left a line out would read as a backup restored, and a client deleting its original would lose it.

The rules a restore keeps (docs/imports.md, "threadmem exports"):

- A channel that exists is never written to: when it is the importer's and every message of the export
  is in it by source id, the import counts them as known (importing an export again adds nothing);
  otherwise the thread is refused, naming the channel.
- A fork is restored as a fork when its parent channel is one of the importer's threads and holds the
  fork message's seq; otherwise as a plain thread, with a note.
- ``isolated`` is restored only by an import with an admin's authority (``restore_isolation``): for any
  other, an isolated thread is refused and isolated messages are left out, with a note, so that nothing
  an admin isolated reaches the model through an export and an import. A message exported without its
  content (``content_withheld``) is left out, with a note: there is nothing to restore.
- A summary's ``refs`` point its messageIds at the restored messages (same channel and seq).

``restoring`` holds the entry points; ``reading`` checks the lines, ``writing`` writes a new thread,
``existing`` answers for a channel that exists, ``outcome`` holds what a restore did.
"""

from threadmem.features.imports.restore.outcome import Restored
from threadmem.features.imports.restore.restoring import restore_order, thread_restore

__all__ = ["Restored", "restore_order", "thread_restore"]
