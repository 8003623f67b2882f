"""Throwaway distributions, installed the way pip leaves them: a module and a ``NAME-VERSION.dist-info``
directory (``METADATA``, ``entry_points.txt``) side by side in a directory on ``sys.path``. That is all
``importlib.metadata`` reads, so no network, index or build step is involved."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def install_distribution(
    site: Path, name: str, version: str, modules: Mapping[str, str], entry_points: Mapping[str, str]
) -> Path:
    """Write distribution ``name`` into ``site`` with ``modules`` (module name -> source) and
    ``entry_points`` in the ``mnemo.providers`` group (entry name -> ``module:attr``); returns ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    points = "".join(f"{entry} = {target}\n" for entry, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[mnemo.providers]\n{points}")
    (info / "RECORD").write_text("")
    return site
