"""The compaction summary: ten numbered sections (SPEC §4).

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

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from threadmem import llm
from threadmem.compaction import catalogue

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
# A model section longer than this is cut (the messages stay searchable).
SECTION_MAX_CHARS = 8_000
# Offline summarizer limits: one quoted message, and the user-message list.
QUOTE_CHARS = 600
USER_MESSAGES_MAX_CHARS = 8_000
LISTED_ERRORS = 15
LISTED_FILES = 30
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


@dataclass(frozen=True)
class Summary:
    content: str
    model: str
    input_chars: int
    model_calls: int


# --- helpers ----------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: str, limit: int) -> str:
    return _clip(" ".join(text.split()), limit)


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


def _own_messages(data: GenerationInput) -> tuple[Any | None, list[Any]]:
    """The previous generation's summary (if it leads) and the rest."""
    previous = None
    rest = []
    for message in data.messages:
        if message.kind == "summary" and previous is None:
            previous = message
        else:
            rest.append(message)
    return previous, rest


def _call_text(call: dict[str, Any]) -> str:
    return f"{call.get('name', 'tool')} {json.dumps(call.get('arguments') or {}, ensure_ascii=False)}"


# --- offline summarizer ----------------------------------------------------


def offline_sections(data: GenerationInput) -> dict[int, str]:
    """Sections 1-9 from the messages alone: first request, user messages, errors seen, last state."""
    previous, messages = _own_messages(data)
    previous_sections = split_sections(previous.content) if previous is not None else {}
    users = [m for m in messages if m.role == "user" and m.kind == "message"]
    assistants = [m for m in messages if m.role == "assistant"]
    results = [m for m in messages if m.role == "tool"]
    calls = [(m, call) for m in assistants for call in (m.tool_calls or [])]
    results_by_call = {m.tool_call_id: m for m in results if m.tool_call_id}
    errors = [m for m in results if catalogue.result_is_error(m.content)]
    call_of = {call.get("id"): (m, call) for m, call in calls if call.get("id")}
    resources = catalogue.collect_resources(messages)
    # Positions, not seqs, order events: a fork's inherited messages carry its parent's seqs.
    pos = {m.id: index for index, m in enumerate(messages)}
    sections: dict[int, str] = {}

    # 1 Primary request and intent
    parts = []
    if previous_sections.get(1):
        parts.append("From earlier generations:\n" + _clip(previous_sections[1], 2_000))
    if users:
        first = users[0]
        parts.append(f"First request in this generation (messageId={first.id}):\n{_clip(first.content, 1_500)}")
    elif not parts:
        parts.append("No user message in this generation.")
    if data.title:
        parts.append(f"Thread title: {data.title}")
    sections[1] = "\n\n".join(parts)

    # 2 Key technical concepts
    tool_counts = Counter(call.get("name", "tool") for _, call in calls)
    kind_counts = Counter(r.kind for r in resources)
    lines = []
    if tool_counts:
        lines.append("Tools used: " + ", ".join(f"{name} ×{n}" for name, n in tool_counts.most_common()))
    if kind_counts:
        lines.append(
            "Resources touched: "
            + ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(kind_counts.items()))
            + " (section 10)"
        )
    sessions = sorted({m.session_id for m in messages if m.session_id})
    if sessions:
        lines.append("Sessions: " + ", ".join(sessions[:10]) + (" …" if len(sessions) > 10 else ""))
    sections[2] = "\n".join(lines) or "No tools were used in this generation."

    # 3 Files and code sections
    files = [r for r in resources if r.kind == "file"]
    files.sort(key=lambda r: -len(r.accesses))
    lines = [
        f"- `{_one_line(r.name, 160)}`: {len(r.accesses)} access{'es' if len(r.accesses) != 1 else ''}, "
        f"latest messageId={r.latest.message_id}"
        for r in files[:LISTED_FILES]
    ]
    if len(files) > LISTED_FILES:
        lines.append(f"- … {len(files) - LISTED_FILES} more in section 10")
    sections[3] = "\n".join(lines) or "No files were touched through tools in this generation."

    # 4 Errors and fixes
    lines = []
    for error in errors[:LISTED_ERRORS]:
        origin = call_of.get(error.tool_call_id)
        what = f" ({_one_line(_call_text(origin[1]), 160)})" if origin else ""
        fixed = ""
        if origin:
            same = [
                m
                for m, call in calls
                if pos[m.id] > pos[origin[0].id]
                and _call_text(call) == _call_text(origin[1])
                and (r := results_by_call.get(call.get("id"))) is not None
                and not catalogue.result_is_error(r.content)
            ]
            if same:
                fixed = f"; the same call succeeded later at messageId={same[0].id}"
        lines.append(f"- messageId={error.id}{what}: {_one_line(error.content, 240)}{fixed}")
    if len(errors) > LISTED_ERRORS:
        lines.append(f"- … {len(errors) - LISTED_ERRORS} more errors")
    sections[4] = "\n".join(lines) or "No tool errors were recorded in this generation."

    # 5 Problem solving
    if messages:
        seqs = [m.seq for m in messages]
        lines = [
            f"{len(messages)} messages (seq {min(seqs)}–{max(seqs)}): {len(users)} from the user, "
            f"{len(assistants)} from the assistant, {len(results)} tool results; {len(calls)} tool calls, "
            f"{len(errors)} of them failed."
        ]
    else:
        lines = ["No messages in this generation."]
    conclusions = [m for m in assistants if m.content.strip()][-3:]
    if conclusions:
        lines.append("Latest assistant conclusions:")
        lines += [f"- messageId={m.id}: {_one_line(m.content, 300)}" for m in conclusions]
    sections[5] = "\n".join(lines)

    # 6 All user messages
    lines, size = [], 0
    for index, message in enumerate(users):
        line = f"- messageId={message.id}: {_one_line(message.content, QUOTE_CHARS)}"
        if size + len(line) > USER_MESSAGES_MAX_CHARS:
            channel = json.dumps(data.channel, ensure_ascii=False)
            lines.append(
                f"- … {len(users) - index} more user messages; search_memory(channel={channel}, query=…) finds them"
            )
            break
        lines.append(line)
        size += len(line) + 1
    sections[6] = "\n".join(lines) or "No user messages in this generation."

    # 7 Pending tasks, 8 Current work, 9 Optional next step
    last_user = users[-1] if users else None
    answered = last_user is not None and any(pos[m.id] > pos[last_user.id] and m.content.strip() for m in assistants)
    if last_user is None:
        sections[7] = "No user request in this generation."
    elif answered:
        sections[7] = (
            f"No open request was recorded after the assistant's last answer; the latest user request was "
            f"messageId={last_user.id}: {_one_line(last_user.content, 300)}"
        )
    else:
        sections[7] = f"Unanswered user request (messageId={last_user.id}): {_one_line(last_user.content, QUOTE_CHARS)}"
    lines = []
    last_text = next((m for m in reversed(assistants) if m.content.strip()), None)
    if last_text is not None:
        lines.append(f"Last assistant message (messageId={last_text.id}): {_one_line(last_text.content, 1_000)}")
    if calls:
        message, call = calls[-1]
        result = results_by_call.get(call.get("id"))
        state = "no result yet"
        if result is not None:
            state = f"result messageId={result.id}, {'error' if catalogue.result_is_error(result.content) else 'ok'}"
        lines.append(f"Last tool call (messageId={message.id}): {_one_line(_call_text(call), 300)} ({state})")
    sections[8] = "\n".join(lines) or "Nothing recorded."
    last_result = results[-1] if results else None
    if last_result is not None and pos[last_result.id] > max((pos[m.id] for m in assistants), default=-1) and errors:
        if errors[-1].id == last_result.id:
            sections[9] = f"Resolve the error in messageId={last_result.id} before going on."
        else:
            sections[9] = f"Read the latest tool result (messageId={last_result.id}) and go on."
    elif last_user is not None and not answered:
        sections[9] = f"Answer the user's latest request (messageId={last_user.id})."
    else:
        sections[9] = "None recorded: wait for the user's next request."
    return sections


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
        lines.append(f"→ tool call {call.get('id', '')}: {_call_text(call)}")
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
    return {n: _clip(body, SECTION_MAX_CHARS) for n, body in sections.items() if body}


def model_sections(data: GenerationInput, *, call: ModelCall = _call_model) -> tuple[dict[int, str], _Usage]:
    usage = _Usage()
    blocks = [_render(m) for m in data.messages]
    answer = _summarize_blocks(data, blocks, usage, call=call)
    sections = parse_model_sections(answer)
    if not sections:
        raise llm.LLMBadResponse(
            "chat completion: the summary has none of the nine section headings: " + _one_line(answer, 200)
        )
    return sections, usage


# --- the whole summary -----------------------------------------------------


def summarize(data: GenerationInput, *, use_model: bool | None = None) -> Summary:
    """The summary message's content: header, sections 1-9, section 10 with the guidance line."""
    if use_model is None:
        use_model = llm.chat_configured()
    offline = offline_sections(data)
    previous, own = _own_messages(data)
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
    return Summary(content=f"{intro}\n\n{body}", model=model, input_chars=sent, model_calls=calls)
