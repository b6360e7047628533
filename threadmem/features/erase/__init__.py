"""Removing what the owner no longer wants kept: threads, messages, whole owners, and what retention lets go.

``thread_delete``: a thread (and its forks) with everything derived from it;
``messages``: one message erased and the summaries that quoted it rewritten;
``owners``: every row of an owner; ``retention``: threads idle for longer than
THREADMEM_RETENTION_DAYS. Each deletion leaves a ``Deletion`` record.
"""
