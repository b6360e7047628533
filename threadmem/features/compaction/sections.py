"""The ten numbered sections of a compaction summary (contract §4) and what the summarizers share.

``summary.py`` writes sections 1-9 with the chat model, ``offline.py``
without one; ``catalogue.py`` writes section 10.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

SECTION_TITLES = (
    "Primary request and intent",
    "Key technical concepts",
    "Files and code sections",
    "Errors and fixes",
    "Problem solving",
    "All user messages",
    "Pending tasks",
    "Current work",
    "Optional next step",
    "How to access the resources used",
)
MODEL_SECTIONS = range(1, 10)


def heading(number: int) -> str:
    return f"## {number}. {SECTION_TITLES[number - 1]}"


OUR_HEADING_RE = re.compile(r"^(## \d{1,2}\. )", re.MULTILINE)


def demote_headings(body: str) -> str:
    """Quoted text (a user message, a model's stray heading) must not read as one of our section headings."""
    return OUR_HEADING_RE.sub(r"#\1", body)


@dataclass(frozen=True)
class GenerationInput:
    """What one compaction summarizes: the generation's messages up to the cut."""

    channel: str
    title: str
    generation: int
    # Model-visible messages in seq order; a previous summary (kind=summary) may lead.
    messages: list[Any]


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def one_line(text: str, limit: int) -> str:
    return clip(" ".join(text.split()), limit)


def split_sections(text: str) -> dict[int, str]:
    """``{number: body}`` of a summary written with our headings (a stored summary, say)."""
    sections: dict[int, str] = {}
    current = None
    lines: list[str] = []
    for line in text.splitlines():
        match = re.match(r"^## (\d{1,2})\. ", line)
        if match and 1 <= int(match.group(1)) <= 10:
            if current is not None:
                sections[current] = "\n".join(lines).strip()
            current, lines = int(match.group(1)), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip()
    return sections


def own_messages(data: GenerationInput) -> tuple[Any | None, list[Any]]:
    """The previous generation's summary (if it leads) and the rest."""
    previous = None
    rest = []
    for message in data.messages:
        if message.kind == "summary" and previous is None:
            previous = message
        else:
            rest.append(message)
    return previous, rest


def call_text(call: dict[str, Any]) -> str:
    return f"{call.get('name', 'tool')} {json.dumps(call.get('arguments') or {}, ensure_ascii=False)}"
