"""The synthetic needles of bench/recall.py: a busy thread where one path is named in dozens of calls.

Three generations; in each, every one of PATHS files is edited, run, grepped
and read (CALLS_PER_PATH calls a generation, their outputs 1.5 KB each, the
Bash and Grep outputs naming the path again); every read is partial
(offset, limit) but generation 1's first of each file. That first Read
of each file returns a definition line no other message holds (an
association case), and IDENTITIES tool outputs each hold an identifier no
other message holds (an identity case). Deterministic: a seeded random.
"""

from __future__ import annotations

import random

CHANNEL = "bench:recall:synthetic"
PATHS = 20
CALLS_PER_PATH = 8
IDENTITIES = 50
GENERATIONS = 3
TOOLS = ("Edit", "Bash", "Grep", "Read")


def _noise(rng: random.Random, chars: int) -> str:
    words = ("value", "request", "handler", "return", "config", "status", "payload", "result", "session")
    out = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(words))
    return " ".join(out)


def _code(rng: random.Random, path: str, needle: str | None) -> str:
    lines = [f"# {path}"]
    for n in range(60):
        lines.append(f"    x_{n} = compute({rng.randint(0, 10**6)})")
    if needle:
        lines.insert(30, needle)
    return "\n".join(f"{i + 1:>6}→{line}" for i, line in enumerate(lines))


def _call_and_result(call_id: str, tool: str, arguments: dict, output: str) -> list[dict]:
    return [
        {"role": "assistant", "tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def build(user) -> tuple[str, list[tuple[str, str]], list[str]]:
    """(channel, association cases (path, line), identity cases)."""
    from threadmem.domain import services
    from threadmem.features.imports.generations import generation_summary_imported
    from threadmem.models import Thread

    Thread.objects.filter(channel=CHANNEL).delete()
    thread = services.thread_create(owner=user, channel=CHANNEL, title="recall bench: synthetic needles")
    rng = random.Random(15)
    paths = [f"src/app/module_{i:02d}/handler.py" for i in range(PATHS)]
    associations = [(path, f"def needle_{rng.getrandbits(40):010x}(request, session):") for path in paths]
    identities = [f"req-{rng.getrandbits(48):012x}" for _ in range(IDENTITIES)]
    call_number = 0
    for generation in range(1, GENERATIONS + 1):
        batch = []
        first_read = {path: generation == 1 for path in paths}
        for step in range(CALLS_PER_PATH):
            for index, path in enumerate(paths):
                tool = TOOLS[(step + index) % len(TOOLS)]
                call_id = f"toolu_{call_number:06d}"
                call_number += 1
                arguments = {
                    "Edit": {"file_path": path, "old_string": _noise(rng, 80), "new_string": _noise(rng, 80)},
                    "Bash": {"command": f"pytest {path} -q"},
                    "Grep": {"pattern": "compute", "path": path},
                    # Only generation 1's first read of a file is whole (and holds the needle); every other
                    # read is partial, so a model must tell them apart (contract §9's args brief).
                    "Read": {"file_path": path}
                    if first_read[path]
                    else {"file_path": path, "offset": rng.randint(1, 200), "limit": 40},
                }[tool]
                if tool == "Read":
                    needle = associations[index][1] if first_read[path] else None
                    first_read[path] = False
                    output = _code(rng, path, needle)
                elif tool in ("Bash", "Grep"):
                    output = f"{path}:{rng.randint(1, 60)}: {_noise(rng, 1500)}"
                else:
                    output = f"The file {path} has been updated. {_noise(rng, 1400)}"
                batch.append(
                    {"role": "assistant", "tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}
                )
                batch.append({"role": "tool", "tool_call_id": call_id, "content": output})
        if generation == 1:
            for identifier in identities:
                call_id = f"toolu_{call_number:06d}"
                call_number += 1
                batch.append(
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": call_id, "name": "Bash", "arguments": {"command": "curl -s localhost/api/requests"}}
                        ],
                    }
                )
                batch.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": f"{_noise(rng, 700)} id={identifier} {_noise(rng, 700)}",
                    }
                )
        services.messages_append(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
        if generation < GENERATIONS:
            summary = services.messages_parse([{"role": "user", "content": "Files touched: " + ", ".join(paths)}])[0]
            generation_summary_imported(thread=thread, summary=summary, origin="claude-code")
    return CHANNEL, associations, identities
