"""``mnemo chat``: talk to any OpenAI-compatible model with mnemo as its memory."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from typing import Any

from ..agent import AgentMemory
from ..loop import Conversation, ToolEvent
from ._settings import settings_for


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "chat",
        parents=[common],
        help="chat with an OpenAI-compatible model that remembers across sessions",
        description="Interactive chat. The endpoint comes from llm_base_url / llm_model / llm_api_key "
        "(config.toml [llm] table or MNEMO_LLM_* variables) or the options below. Ctrl-D ends the session. "
        "With --json, each line read from stdin is a turn and each turn prints one JSON object per line.",
    )
    parser.add_argument("--base-url", help="chat-completions endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", help="model name")
    parser.add_argument("--session", help="session key (default: a new random one)")
    parser.set_defaults(handler=_chat, interactive=True)


def _chat(args: argparse.Namespace) -> int:
    from ..llm import (
        OpenAICompatibleLLM,  # here: importing openai costs most of a second
    )

    settings = settings_for(args, llm_base_url=args.base_url, llm_model=args.model)
    llm = OpenAICompatibleLLM.from_settings(settings)
    session = args.session or f"chat-{uuid.uuid4().hex[:12]}"
    with AgentMemory.open(session, settings=settings) as memory:
        # With --json each turn is one JSON object on its own line (JSON Lines), tools included.
        conversation = Conversation(memory, llm, on_tool=None if args.json else _show_tool)
        print(f"mnemo chat: session {session}, model {settings.llm_model} (Ctrl-D to end)", file=sys.stderr)
        while True:
            try:
                line = input("" if args.json else "you> ")
            except EOFError:
                if not args.json:
                    print(file=sys.stderr)
                return 0
            if not line.strip():
                continue
            turn = conversation.send(line)
            if args.json:
                tools = [{"name": e.name, "arguments": _decoded(e.arguments), "result": _decoded(e.result)} for e in turn.tool_events]
                payload = {"success": True, "session": session, "user": line, "reply": turn.reply, "tools": tools}
                print(json.dumps(payload, ensure_ascii=False), flush=True)
            else:
                print(f"agent> {turn.reply}", flush=True)


def _decoded(text: str) -> Any:
    """A tool call's JSON text as data, or the text itself when the model wrote something else."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _show_tool(event: ToolEvent) -> None:
    print(f"  [tool {event.name}] {event.result[:200]}", file=sys.stderr)
