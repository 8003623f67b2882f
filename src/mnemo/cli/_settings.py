"""The settings a ``mnemo`` command runs with: the home's configuration, then the command line."""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings, load_settings


def settings_for(args: argparse.Namespace, **overrides: Any) -> Settings:
    """:func:`~mnemo.config.load_settings` for ``--home``, with ``--user`` / ``--agent`` / ``--channel``
    (when given) overriding the configured scope, and ``overrides`` on top."""
    scope = {"user_id": args.user, "agent_id": args.agent, "channel_id": args.channel}
    return load_settings(args.home, **scope, **overrides)
