"""Refusals of the memory graph, each carrying what the caller needs to recover."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument, MnemoError, excerpt
from ..safety.scan import refusal_reason


class MemoryNotFound(InvalidArgument):
    """No memory with this id exists in the graph's scope; ``field`` names the argument that held it."""

    def __init__(self, field: str, memory_id: str) -> None:
        self.memory_id = memory_id
        super().__init__(field, f"no memory with id {excerpt(memory_id)} in this scope")


class BlockedContent(MnemoError):
    """The threat scan refused the content; ``findings`` say why."""

    def __init__(self, field: str, findings: tuple[Any, ...]) -> None:
        self.field = field
        self.findings = findings
        super().__init__(f"{field}: {refusal_reason(findings)}")


class ImportConflict(MnemoError):
    """An import would overwrite a memory whose content differs from the file's."""


