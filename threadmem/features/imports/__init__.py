"""Importing agent sessions (contract §11): Claude Code transcripts and OpenAI chat JSONL.

``claude_code``, ``codex`` and ``openai_chat`` turn lines into items (``records``);
``file_import`` writes them through ``services.messages_store`` in batches and
switches generations at Claude Code's compactions (``generations``), into the
threads of ``import_threads``; ``import_once`` imports paths once (``report``
counts what it did), ``follow`` tails files, ``capture`` takes what a hook sent;
``uploads`` keeps API uploads, ``run`` imports one (inline or from ``tasks``);
``export`` writes threadmem's own format and ``restore`` reads it back.
"""
