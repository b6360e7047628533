"""The compaction summary: ten numbered sections (contract §4).

Sections 1-9 come from the chat model when one is configured, otherwise from
a deterministic summarizer, so the product works offline. Section 10 (the
resource catalogue, ``catalogue.py``) is always built by code from the
messages, so its messageIds are always real.

Long generations are summarized hierarchically: the transcript is cut into
chunks that fit ``THREADMEM_SUMMARY_INPUT_CHARS`` (everything one call
sends, instructions included), each chunk becomes notes, and the notes are
summarized, again in chunks if they are still too long.

A model answer is used section by section: a section the model left out or
left empty is filled by the offline summarizer (and says so); an answer with
none of the nine headings, or an empty one, is an ``LLMBadResponse`` that the
task retries like a transient failure and finally reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from threadmem.features.compaction import catalogue
from threadmem.features.compaction.offline import offline_sections
from threadmem.features.compaction.sections import (
    MODEL_SECTIONS,
    SECTION_TITLES,
    GenerationInput,
    call_text,
    clip,
    demote_headings,
    heading,
    one_line,
    own_messages,
    split_sections,
)
from threadmem.infrastructure import llm

# A model section longer than this is cut (the messages stay searchable).
SECTION_MAX_CHARS = 8_000
# Hierarchical summarization stops after this many rounds of notes-of-notes.
MAX_NOTE_ROUNDS = 4
CHUNK_MIN_CHARS = 1_000

OFFLINE_MODEL = "offline"
FILLED_NOTE = "(The model left this section out; the offline summarizer wrote it.)"

FINAL_INSTRUCTIONS = (
    "Summarize the transcript of one generation of an agent's thread, so that the agent can continue its work "
    "when the transcript is replaced by your summary. Write exactly these nine sections, in this order, each "
    "starting with its heading line exactly as given:\n"
    + "\n".join(f"## {n}. {SECTION_TITLES[n - 1]}" for n in MODEL_SECTIONS)
    + "\n\nWhat each section holds: 1 the user's explicit requests and intents, in detail; 2 the technologies, "
    "concepts and frameworks discussed; 3 the files and code sections examined, changed or created, and why "
    "they matter; 4 the errors met and how they were fixed, with any user feedback; 5 the problems solved and "
    "any troubleshooting still under way; 6 every user message (not tool results), briefly; 7 the tasks asked "
    "for and not yet done; 8 precisely what was being worked on just before this summary; 9 the next step, "
    "only if it follows directly from the user's latest request. Cite evidence as messageId=N. Do not write a "
    "section 10: the resource catalogue is added by code. Write nothing before section 1."
)
NOTES_INSTRUCTIONS = (
    "Below is part {part} of {parts} of the transcript of one generation of an agent's thread (or notes on it). "
    "Write compact notes for a later summary: the user's requests (quoted when short), decisions, files, "
    "commands, hosts, errors and their fixes, and where the work stood at the end of this part. Cite evidence "
    "as messageId=N. Write only the notes."
)


@dataclass(frozen=True)
class Summary:
    content: str
    model: str
    input_chars: int
    model_calls: int
    # (message id, thread id) of every message it was written from: the commit
    # checks that the model may still see each (compaction/selectors.py:source_withdrawn).
    source: tuple[tuple[int, int], ...] = ()


# --- the model --------------------------------------------------------------


def _render(message: Any) -> str:
    """One transcript entry, with its messageId so the model can cite it."""
    head = f"[messageId={message.id} seq={message.seq} role={message.role}"
    if message.kind != "message":
        head += f" kind={message.kind}"
    if message.role == "tool" and message.tool_call_id:
        head += f" result of {message.tool_call_id}"
    head += "]"
    body = message.content
    if message.kind == "summary":
        # The previous catalogue is carried by code; the model needs sections 1-9.
        sections = split_sections(body)
        body = "\n\n".join(f"{heading(n)}\n{sections[n]}" for n in MODEL_SECTIONS if sections.get(n)) or body
        head = "[summary of the earlier generations]"
    lines = [head]
    if body:
        lines.append(body)
    for call in message.tool_calls or []:
        lines.append(f"→ tool call {call.get('id', '')}: {call_text(call)}")
    return "\n".join(lines)


def _chunks(blocks: list[str], limit: int) -> list[str]:
    """Consecutive blocks packed into chunks of at most ``limit`` characters; a longer block is cut."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for block in blocks:
        if len(block) > limit:
            omitted = len(block) - limit + 80
            block = block[: limit - 80] + f"\n…[{omitted} characters omitted]"
        if current and size + len(block) + 2 > limit:
            chunks.append("\n\n".join(current))
            current, size = [], 0
        current.append(block)
        size += len(block) + 2
    if current:
        chunks.append("\n\n".join(current))
    return chunks


ModelCall = Callable[[str, str], llm.ChatReply]


def _call_model(instructions: str, content: str) -> llm.ChatReply:
    return llm.chat([{"role": "user", "content": content}], instructions=instructions)


@dataclass
class _Usage:
    sent: int = 0
    calls: int = 0


def _summarize_blocks(data: GenerationInput, blocks: list[str], usage: _Usage, *, call: ModelCall) -> str:
    limit = int(settings.THREADMEM_SUMMARY_INPUT_CHARS)
    header = f"Thread {data.channel} · generation {data.generation}\n\n"
    overhead = len(llm.SYSTEM_PROMPT) + max(len(FINAL_INSTRUCTIONS), len(NOTES_INSTRUCTIONS) + 20) + len(header) + 64
    room = max(CHUNK_MIN_CHARS, limit - overhead)
    for _ in range(MAX_NOTE_ROUNDS):
        chunks = _chunks(blocks, room)
        if len(chunks) == 1:
            break
        notes = []
        for part, chunk in enumerate(chunks, start=1):
            reply = call(NOTES_INSTRUCTIONS.format(part=part, parts=len(chunks)), header + chunk)
            usage.sent += reply.input_chars
            usage.calls += 1
            notes.append(f"### Notes on part {part} of {len(chunks)}\n{reply.content.strip()}")
        blocks = notes
    chunks = _chunks(blocks, room)
    # Notes that still do not fit after the last round are cut: the messages stay searchable.
    final = chunks[0] if len(chunks) == 1 else "\n\n".join(blocks)[:room]
    reply = call(FINAL_INSTRUCTIONS, header + final)
    usage.sent += reply.input_chars
    usage.calls += 1
    return reply.content


HEADING_RE = re.compile(
    r"^[ \t]*(?P<marker>#{1,6}[ \t]*|\*\*[ \t]*)?(?:section[ \t]+)?(?P<number>\d{1,2})[ \t]*[.):][ \t]*"
    r"(?P<title>.*?)[ \t*#:]*$",
    re.IGNORECASE,
)


def _is_heading(line: str, expected_after: int) -> int | None:
    match = HEADING_RE.match(line)
    if match is None:
        return None
    number = int(match.group("number"))
    if not expected_after < number <= 10:
        return None
    title = re.sub(r"[^a-z ]", "", match.group("title").lower()).strip()
    want = SECTION_TITLES[number - 1].lower()
    # A bare "3. something" is a list item unless its words are the heading's.
    if match.group("marker") or (title and want.startswith(title[: max(8, len(title) // 2)])):
        return number
    return None


def parse_model_sections(text: str) -> dict[int, str]:
    """Sections 1-9 of a model's answer, by their numbered headings (any markdown decoration)."""
    sections: dict[int, str] = {}
    current = 0
    lines: list[str] = []
    for line in text.splitlines():
        number = _is_heading(line, current)
        if number is not None:
            if current:
                sections[current] = "\n".join(lines).strip()
            if number == 10:
                current = 0
                break
            current, lines = number, []
        elif current:
            lines.append(line)
    if current:
        sections[current] = "\n".join(lines).strip()
    return {n: clip(body, SECTION_MAX_CHARS) for n, body in sections.items() if body}


def model_sections(data: GenerationInput, *, call: ModelCall = _call_model) -> tuple[dict[int, str], _Usage]:
    usage = _Usage()
    blocks = [_render(m) for m in data.messages]
    answer = _summarize_blocks(data, blocks, usage, call=call)
    sections = parse_model_sections(answer)
    if not sections:
        raise llm.LLMBadResponse(
            "chat completion: the summary has none of the nine section headings: " + one_line(answer, 200)
        )
    return sections, usage


# --- the whole summary -----------------------------------------------------


def summarize(data: GenerationInput, *, use_model: bool | None = None) -> Summary:
    """The summary message's content: header, sections 1-9, section 10 with the guidance line."""
    if use_model is None:
        use_model = llm.chat_configured()
    offline = offline_sections(data)
    previous, own = own_messages(data)
    if use_model:
        sections, usage = model_sections(data)
        for number in MODEL_SECTIONS:
            if number not in sections:
                sections[number] = f"{FILLED_NOTE}\n{offline[number]}"
        model, sent, calls = llm.chat_model(), usage.sent, usage.calls
    else:
        sections, model, sent, calls = offline, OFFLINE_MODEL, 0, 0
    previous_catalogue = split_sections(previous.content).get(10, "") if previous is not None else ""
    resources = catalogue.collect_resources(data.messages)
    sections[10] = catalogue.catalogue_text(resources, channel=data.channel, previous_section=previous_catalogue)
    seqs = [m.seq for m in own]
    span = f"seq {min(seqs)}–{max(seqs)}" if seqs else "no messages"
    writer = f"the chat model {model}" if use_model else "the offline summarizer (no chat model configured)"
    intro = (
        f"Summary of generation {data.generation} of thread {data.channel} ({len(own)} messages, {span}). "
        f"Sections 1–9 were written by {writer}; section 10 was built from the messages. "
        "The messages themselves stay stored and searchable."
    )
    body = "\n\n".join(f"{heading(n)}\n{demote_headings(sections[n]) if n < 10 else sections[n]}" for n in range(1, 11))
    source = tuple((m.id, m.thread_id) for m in data.messages)
    return Summary(content=f"{intro}\n\n{body}", model=model, input_chars=sent, model_calls=calls, source=source)
