"""What one export's restore did (``Restored``), and the refusal that stops it whole (``Refused``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from threadmem.errors import DomainError, InvalidInput
from threadmem.features.imports.records import Problem
from threadmem.models import Thread


@dataclass
class Restored:
    """What one export's restore did: ``problems`` are refused lines (or the whole thread), ``notes`` what
    was restored otherwise than exported."""

    channel: str = ""
    lines: int = 0
    bytes: int = 0
    messages_new: int = 0
    messages_known: int = 0
    thread: Thread | None = None
    # Why nothing was restored (its kind: the HTTP status an upload answers with), or None.
    refusal: DomainError | None = None
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    def problem(self, problem: Problem) -> None:
        self.problems.append(problem)

    def note(self, line: int, text: str) -> None:
        self.notes.append(Problem(line, text))


class Refused(Exception):
    """The thread is not restored; nothing of it is stored."""

    def __init__(self, line: int, reason: str, kind: type[DomainError] = InvalidInput) -> None:
        super().__init__(reason)
        self.line, self.reason, self.kind = line, reason, kind
