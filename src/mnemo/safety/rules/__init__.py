"""The threat scan's patterns, by family (:mod:`.injection`, :mod:`.exfiltration`, :mod:`.html`), and their
compiled form.

Matching runs on folded, lower-cased text (see :func:`mnemo.safety.normalize.fold`); the patterns are written
in any case and lower-cased when compiled. Quantifiers are bounded so a hostile input cannot make a pattern
backtrack for long.
"""

from __future__ import annotations

from ..._once import once
from . import exfiltration, html, injection
from .rule import Rule, RuleSpec, compile_pattern

__all__ = ["RULES", "Rule", "compiled"]

RULES: tuple[RuleSpec, ...] = (*injection.RULES, *exfiltration.RULES, *html.RULES)
"""Every rule, in the order findings are reported."""



# Patterns run case-sensitively on lower-cased text: the same matches as ``re.IGNORECASE``, in about
# two thirds of the time. Compiled on the first scan, not at import: ~40 ms that a process which never
# writes (a search, a recall) should not pay.
@once
def compiled() -> tuple[Rule, ...]:
    """The rules, compiled; those whose matches open with known literals are tried only where these occur
    (see :mod:`.openings`)."""
    return tuple(
        Rule(category, name, needs, compile_pattern(pattern) if isinstance(pattern, str) else pattern)
        for category, name, needs, pattern in RULES
    )

