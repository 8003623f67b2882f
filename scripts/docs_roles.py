"""Griffe extension (mkdocs.yml, mkdocstrings' ``extensions:``): mnemo's docstrings name code with Sphinx roles
(``:class:`~mnemo.errors.ConfigError```); Markdown knows none, so each becomes inline code as Sphinx would
print it (a leading ``~`` keeps only the last dotted part) instead of showing the role's markup on the site."""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|exc|data|obj|const):`(~?)([^`]+)`")


def _as_code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxRolesAsCode(Extension):
    """Rewrite every docstring's Sphinx roles as inline code as the API reference loads it."""

    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_as_code, obj.docstring.value)
