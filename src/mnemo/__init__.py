"""mnemo: durable, safe, local long-term memory for LLM agents.

The public API is re-exported here; everything else is internal.
"""

from __future__ import annotations

from .config import Settings, load_settings, resolve_home
from .errors import ConfigError, InvalidArgument, MnemoError

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "InvalidArgument",
    "MnemoError",
    "Settings",
    "load_settings",
    "resolve_home",
]
