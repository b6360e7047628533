"""The scripted models of bench/recall.py (no LLM): they search a path and follow only what the tools return.

``scripted_search`` uses the links of contract §9 (``tool=``, ``result=``,
``cursor=``); ``blind_search`` is the same model without them. Each answers
(found, calls, most characters one call returned).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Whether a hit (message id, generation) is one the model must recall, not one in its context.
IsOld = Callable[[int, int], bool]

# A hit's header (contract §9): ``result=`` ids may carry sizes (``14 (2,310 chars)``), then the call's other
# arguments in brief (``args: offset=120 limit=40``) and the messages with the same window.
HIT = re.compile(
    r"^--- messageId=(\d+) .*?generation=(\d+) role=(\w+) field=(\S+)"
    r"(?: tool=(\S+) (result|call)=(-|[\d,…]+(?: \([\d,]+ chars\))?(?:,\d+(?: \([\d,]+ chars\))?)*(?:,…)?))?"
    r"(?: args: (.*?))?(?: \(×\d+ identical: messageIds [\d, …]+\))?$"
)
RESULT_ID = re.compile(r"(?:^|,)(\d+)")
SIZE = re.compile(r" \([\d,]+ chars\)")  # a result's size: its thousands separator is no id
PARTIAL = re.compile(r"(?:^| )(?:offset|limit)=")
NEXT_CURSOR = re.compile(r'cursor="([^"]+)"')
NEXT_OFFSET = re.compile(r"\nnext offset: (\d+)$")


class ToolCalls:
    """The model's tool calls on one channel: how many, and the most characters one answered."""

    def __init__(self, user, channel: str) -> None:
        self.user = user
        self.channel = channel
        self.calls = 0
        self.most = 0

    def __call__(self, name: str, arguments: dict) -> str:
        from threadmem.features.tools import run_tool

        self.calls += 1
        text = run_tool(name=name, arguments=arguments, user=self.user, default_channel=self.channel, surface="api")
        self.most = max(self.most, len(text))
        return text


def scripted_search(
    user, channel: str, is_old: IsOld, path: str, line: str, max_calls: int
) -> tuple[bool, int, int, int]:
    """The scripted model: (found, calls, most characters one call returned, calls that read partial reads).

    It asks for the path's reads only (``tool="Read"``, as the tool's
    description suggests), and reads whole-file reads (no ``offset``/``limit``
    in the hit's ``args:``) before partial ones.
    """
    from threadmem.errors import DomainError
    from threadmem.features.tools import MESSAGE_CONTEXT_READ, SEARCH_MEMORY

    call = ToolCalls(user, channel)
    queue: list[int] = []
    queued: set[int] = set()
    partial: set[int] = set()
    partial_calls = 0
    cursor: str | None = None
    searched = False

    while call.calls < max_calls:
        if not searched or (not queue and cursor):
            arguments = {"query": path, "channel": channel, "tool": "Read", **({"cursor": cursor} if cursor else {})}
            text = call(SEARCH_MEMORY, arguments)
            searched = True
            if line in text:
                return True, call.calls, call.most, partial_calls
            found_cursor = NEXT_CURSOR.search(text)
            cursor = found_cursor.group(1) if found_cursor else None
            whole, parts = [], []
            for header in text.splitlines():
                hit = HIT.match(header)
                if not hit or not is_old(int(hit.group(1)), int(hit.group(2))) or hit.group(5) != "Read":
                    continue
                ids = [int(hit.group(1))] if hit.group(6) == "call" else []
                if hit.group(6) == "result" and hit.group(7) != "-":
                    ids = [int(i) for i in RESULT_ID.findall(SIZE.sub("", hit.group(7)))]
                is_partial = bool(hit.group(8) and PARTIAL.search(hit.group(8)))
                (parts if is_partial else whole).extend(ids)
                if is_partial:
                    partial.update(ids)
            for message_id in [*whole, *parts]:
                if message_id not in queued:
                    queued.add(message_id)
                    queue.append(message_id)
            queue.sort(key=lambda message_id: message_id in partial)  # whole-file reads first
            continue
        if not queue:
            break
        message_id = queue.pop(0)
        offset = 0
        while call.calls < max_calls:
            try:
                text = call(MESSAGE_CONTEXT_READ, {"message_id": message_id, "offset": offset})
            except DomainError:  # pragma: no cover - run_tool answers errors as text
                break
            partial_calls += message_id in partial
            if line in text:
                return True, call.calls, call.most, partial_calls
            more = NEXT_OFFSET.search(text)
            if not more:
                break
            offset = int(more.group(1))
    return False, call.calls, call.most, partial_calls


def blind_search(user, channel: str, is_old: IsOld, path: str, line: str, max_calls: int) -> tuple[bool, int, int, int]:
    """The same model without ``tool=``, ``result=`` and ``cursor=`` (the tools before contract §9).

    It reads the hits of earlier generations in listed order; an assistant
    message's audit read names its results (``results: messageId=N``), which
    it reads next. No second page: past the first, only a narrower query helps.
    It cannot tell a partial read from a whole one (its fourth answer is 0).
    """
    from threadmem.features.tools import MESSAGE_CONTEXT_READ, SEARCH_MEMORY

    call = ToolCalls(user, channel)
    text = call(SEARCH_MEMORY, {"query": path, "channel": channel})
    if line in text:
        return True, call.calls, call.most, 0
    queue = []
    for header in text.splitlines():
        hit = HIT.match(header)
        if hit and is_old(int(hit.group(1)), int(hit.group(2))) and int(hit.group(1)) not in queue:
            queue.append(int(hit.group(1)))
    read: set[int] = set()
    while queue and call.calls < max_calls:
        message_id = queue.pop(0)
        if message_id in read:
            continue
        read.add(message_id)
        offset = 0
        while call.calls < max_calls:
            text = call(MESSAGE_CONTEXT_READ, {"message_id": message_id, "offset": offset})
            if line in text:
                return True, call.calls, call.most, 0
            results = [int(i) for i in re.findall(r"results: (?:messageId=(\d+))", text)]
            queue[:0] = [i for i in results if i not in read]
            more = NEXT_OFFSET.search(text)
            if not more:
                break
            offset = int(more.group(1))
    return False, call.calls, call.most, 0
