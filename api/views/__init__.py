"""REST views, one module per area: threads.py (threads, messages, context),
memory.py (search, audit read, tool-call log, tools), compaction.py."""
