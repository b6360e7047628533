"""Importing agent sessions (contract §11): Claude Code transcripts and OpenAI chat JSONL.

``claude_code`` and ``openai_chat`` turn lines into items (``records``);
``service`` writes them through ``services.messages_store`` in batches and
switches generations at Claude Code's compactions; ``follow`` tails files;
``uploads`` keeps API uploads, ``run`` imports one (inline or from ``tasks``).
"""
