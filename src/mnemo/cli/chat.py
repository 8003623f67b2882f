"""``mnemo chat``: talk to any OpenAI-compatible model with mnemo as its memory."""

from __future__ import annotations

import argparse
import sys
import uuid

from ..agent import AgentMemory
from ..loop import Conversation, ToolEvent
from ._settings import settings_for


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "chat",
        parents=[common],
        help="chat with an OpenAI-compatible model that remembers across sessions",
        description="Interactive chat. The endpoint comes from llm_base_url / llm_model / llm_api_key "
        "(config.toml [llm] table or MNEMO_LLM_* variables) or the options below. Ctrl-D ends the session.",
    )
    parser.add_argument("--base-url", help="chat-completions endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", help="model name")
    parser.add_argument("--session", help="session key (default: a new random one)")
    parser.set_defaults(handler=_chat)


def _chat(args: argparse.Namespace) -> int:
    from ..llm import (
        OpenAICompatibleLLM,  # here: importing openai costs most of a second
    )

    settings = settings_for(args, llm_base_url=args.base_url, llm_model=args.model)
    llm = OpenAICompatibleLLM.from_settings(settings)
    session = args.session or f"chat-{uuid.uuid4().hex[:12]}"
    with AgentMemory.open(session, settings=settings) as memory:
        conversation = Conversation(memory, llm, on_tool=_show_tool)
        print(f"mnemo chat: session {session}, model {settings.llm_model} (Ctrl-D to end)", file=sys.stderr)
        while True:
            try:
                line = input("you> ")
            except EOFError:
                print(file=sys.stderr)
                return 0
            if line.strip():
                print(f"agent> {conversation.send(line).reply}")


def _show_tool(event: ToolEvent) -> None:
    print(f"  [tool {event.name}] {event.result[:200]}", file=sys.stderr)
