"""Safety: threat scanning of text bound for a prompt, context fencing, and scrubbing of echoed fences."""

from __future__ import annotations

from .scan import Finding, scan

__all__ = [
    "Finding",
    "scan",
]
