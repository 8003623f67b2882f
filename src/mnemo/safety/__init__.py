"""Safety: threat scanning of text bound for a prompt, context fencing, and scrubbing of echoed fences."""

from __future__ import annotations

from .fence import (
    MEMORY_CONTEXT_NOTE,
    MEMORY_CONTEXT_TAG,
    build_memory_context_block,
    inject_memory_context,
    render_sections,
    sanitize_context,
)
from .scan import Finding, finding_labels, refusal_reason, scan, scan_many
from .scrub import ContextScrubber, scrub_memory_context

__all__ = [
    "MEMORY_CONTEXT_NOTE",
    "MEMORY_CONTEXT_TAG",
    "ContextScrubber",
    "Finding",
    "build_memory_context_block",
    "finding_labels",
    "inject_memory_context",
    "refusal_reason",
    "render_sections",
    "sanitize_context",
    "scan",
    "scan_many",
    "scrub_memory_context",
]
