"""What :class:`~mnemo.agent.AgentMemory` runs without when part of its storage cannot be used.

mnemo's own database holds the session archive and the memory graph. When it cannot be opened (cut
off, overwritten, not a file, on a read-only or full disk, newer than this code), the default is to
refuse: :meth:`AgentMemory.open <mnemo.agent.AgentMemory.open>` raises
:class:`~mnemo.errors.StorageUnavailable` naming each component and why, so nothing runs on quietly
without the memory the agent was built around. With the setting ``allow_degraded = true`` it starts
anyway:

- :attr:`AgentMemory.degraded <mnemo.agent.AgentMemory.degraded>` lists every :class:`Degradation`:
  the built-in components that are down, a curated file that could not be read (writes to it are
  refused), and any other provider dropped at start;
- ``tools()`` still lists the missing components' tools, and each call to one answers with the reason
  (never "unknown tool"), so the model can tell the user;
- turns are not archived and nothing is recalled until the storage is repaired.

The damaged file itself is never written to: ``mnemo doctor`` says what is wrong and how to recover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Degradation"]


@dataclass(frozen=True)
class Degradation:
    """One part of memory that is not working this session, and why."""

    component: str
    """``"archive"``, ``"graph"``, ``"curated:memory"``, ``"curated:user"`` or a provider's name."""
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"component": self.component, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.component}: {self.reason}"

