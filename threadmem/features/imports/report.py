"""What an import run did: files, lines, bytes, messages new, known and grown, the problems and notes it met."""

from __future__ import annotations

from dataclasses import dataclass, field

from threadmem.domain.redaction import text_redacted
from threadmem.errors import DomainError

MAX_REPORTED_PROBLEMS = 100


@dataclass
class ImportReport:
    files: int = 0
    lines: int = 0
    bytes: int = 0
    skipped: int = 0
    messages_new: int = 0
    messages_known: int = 0
    messages_grown: int = 0
    channels: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "file:line: reason", the first MAX_REPORTED_PROBLEMS
    # What was imported otherwise than the file holds (a restored fork without its parent), "file:line: note".
    notes: list[str] = field(default_factory=list)
    # The threadmem exports refused whole (nothing of them stored): "file: why", with its kind (the HTTP status).
    refusals: list[DomainError] = field(default_factory=list)
    refused_lines: int = 0  # of ``skipped``: the lines of the refused exports

    def problem(self, where: str, line: int, reason: str) -> str:
        self.skipped += 1
        text = f"{where}:{line}: {text_redacted(reason)}"  # a reason may quote what the line held
        if len(self.problems) < MAX_REPORTED_PROBLEMS:
            self.problems.append(text)
        return text

    def note(self, where: str, line: int, text: str) -> None:
        if len(self.notes) < MAX_REPORTED_PROBLEMS:
            self.notes.append(f"{where}:{line}: {text_redacted(text)}")  # a note quotes what the export named

    def channel(self, channel: str) -> None:
        if channel not in self.channels:
            self.channels.append(channel)
