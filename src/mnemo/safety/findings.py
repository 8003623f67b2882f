"""What the threat scan reports: the categories and layers of a :class:`Finding`, the finding itself, its
printable excerpt, and how findings are told to a model (categories and rules, never the text)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PROMPT_INJECTION = "prompt_injection"
ROLE_HIJACK = "role_hijack"
EXFILTRATION = "exfiltration"
SSH_BACKDOOR = "ssh_backdoor"
REMOTE_CODE = "remote_code"
HIDDEN_HTML = "hidden_html"
INVISIBLE_UNICODE = "invisible_unicode"

CATEGORIES: tuple[str, ...] = (
    PROMPT_INJECTION,
    ROLE_HIJACK,
    EXFILTRATION,
    SSH_BACKDOOR,
    REMOTE_CODE,
    HIDDEN_HTML,
    INVISIBLE_UNICODE,
)
"""Every category a :class:`Finding` can carry, in the order findings are reported."""


LAYERS: tuple[str, ...] = ("pattern", "classifier", "unicode")
"""Which layer of the scan produced a :class:`Finding`."""

CLASSIFIER_RULE = "injection_classifier"

EXCERPT_CHARS = 80
_CONTEXT_CHARS = 24



@dataclass(frozen=True)
class Finding:
    """One reason a text was judged hostile.

    ``category`` is one of :data:`CATEGORIES`; ``rule`` names the pattern that matched (stable, for
    logs and tests; :data:`CLASSIFIER_RULE` for the classifier); ``excerpt`` is a short printable snippet
    around the match (at most 80 characters, invisible characters spelled ``U+XXXX``) for logs and the
    operator: refusals shown to a model name the category and rule only. ``layer`` is one of
    :data:`LAYERS`; ``via`` names the disguise the match was found under (``"base64"``, ``"leetspeak"``,
    ``"base64+url"``...; empty for the text as written); ``score`` is the classifier's probability.
    """

    category: str
    rule: str
    excerpt: str
    layer: str = "pattern"
    via: str = ""
    score: float | None = None


def _visible(char: str) -> str:
    if char in "\n\r\t":
        return " "
    # Every invisible and bidi-control character is a format character, hence not printable.
    return char if char.isprintable() else f"U+{ord(char):04X}"


def _take(tokens: list[str], budget: int) -> list[str]:
    """The longest run of whole ``tokens`` from the start that fits in ``budget`` characters."""
    taken: list[str] = []
    for token in tokens:
        if len(token) > budget:
            break
        taken.append(token)
        budget -= len(token)
    return taken


def excerpt(text: str, start: int, end: int) -> str:
    """A printable snippet of ``text[start:end]`` with a little context, never over 80 characters."""
    core = "".join(_visible(c) for c in text[start:end])
    if len(core) >= EXCERPT_CHARS:
        return core[: EXCERPT_CHARS - 3] + "..."
    budget = EXCERPT_CHARS - len(core)
    before = [_visible(c) for c in reversed(text[max(0, start - _CONTEXT_CHARS) : start])]
    after = [_visible(c) for c in text[end : end + _CONTEXT_CHARS]]
    left = _take(before, budget // 2)
    right = _take(after, budget - sum(map(len, left)))
    snippet = "".join(reversed(left)) + core + "".join(right)
    return " ".join(snippet.split()) or snippet


def _label(finding: Finding) -> str:
    label = f"{finding.category}: {finding.rule}"
    if finding.score is not None:
        label += f" {finding.score:.2f}"
    return label + (f" via {finding.via}" if finding.via else "")


def refusal_reason(findings: Sequence[Finding]) -> str:
    """One line telling a model why its text was refused, naming categories, rules and scores but never
    repeating the text: ``blocked by the threat scan (prompt_injection: ignore_instructions via base64)``."""
    return f"blocked by the threat scan ({'; '.join(_label(f) for f in findings) or 'unsafe content'})"


def finding_labels(findings: Sequence[Finding]) -> list[dict[str, object]]:
    """The findings as JSON-ready dicts without their excerpts (which would put the payload back in context)."""
    return [
        {"category": f.category, "rule": f.rule, "layer": f.layer, "via": f.via, "score": f.score} for f in findings
    ]
