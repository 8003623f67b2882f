"""Rules for instructions hidden in HTML: scripts, event handlers and ``javascript:`` links."""

from __future__ import annotations

from ..findings import HIDDEN_HTML
from .rule import RuleSpec

RULES: tuple[RuleSpec, ...] = (
    # --- hidden HTML
    (
        HIDDEN_HTML,
        "instruction_in_html_comment",
        (("<!--",),),
        # "<!-- generated: do not edit -->" is ordinary; words aimed at a model or at secrets are not.
        r"<!--(?:(?!-->|<!--)[\s\S]){0,2000}?\b(?:ignore|disregard|instructions?|system\s*prompt|system\s*:|assistant"
        r"|the\s+(?:ai|model|llm|agent)|you\s+(?:must|should|will|are\s+now)|do\s+not\s+tell|reveal|exfiltrate"
        r"|curl|wget|password|secret|api[\s_-]?key|credentials?)\b",
    ),
    (
        HIDDEN_HTML,
        "hidden_element",
        (("<",), ("style", "hidden")),
        r"<[a-z][^<>]{0,400}\bstyle\s*=\s*[\"']?[^\"'<>]{0,300}(?:display\s*:\s*none|visibility\s*:\s*hidden"
        r"|font-size\s*:\s*0(?:\.0+)?(?:px|em|rem|pt|%)?\s*(?:[;\"'>]|$)|opacity\s*:\s*0(?:\.0+)?\s*(?:[;\"'>]|$)"
        r"|(?:left|top)\s*:\s*-\d{4,})"
        # ``hidden={!open}`` is JSX toggling a drawer, not a static hiding place.
        r"|<[a-z][^<>]{0,400}\shidden(?=[\s/>]|=(?!\s*\{))",
    ),
    (
        HIDDEN_HTML,
        "script_or_handler",
        (
            (
                "script", "iframe", "object", "embed", "onerror", "onload", "onclick", "onmouseover", "onfocus",
                "onblur", "onsubmit", "javascript:",
            ),
        ),
        r"<\s*(?:script|iframe|object|embed)\b"
        r"|<[a-z][^<>]{0,400}\son(?:error|load|click|mouseover|focus|blur|submit)\s*="
        r"|\bhref\s*=\s*[\"']?\s*javascript:",
    ),
)
