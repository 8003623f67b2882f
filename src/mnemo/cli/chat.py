"""``mnemo chat``: talk to any OpenAI-compatible model with mnemo as its memory."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from ..agent import AgentMemory
from ..loop import Conversation, HostTool, ToolEvent
from ._output import CliError
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
    parser.add_argument(
        "--read-dir", type=Path, help="let the model read text files under this directory (a read_file tool; what it"
        " reads is untrusted: memory writes after it wait for your review)",
    )  # fmt: skip
    parser.set_defaults(handler=_chat, interactive=True)


_READ_FILE_SCHEMA = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a UTF-8 text file, by its path relative to the directory the user shared.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "the file's relative path"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}
_READ_LIMIT = 100_000


def _file_reader(directory: Path) -> HostTool:
    """The read_file tool over ``directory``: a path that leads outside it is refused."""
    root = directory.resolve()
    if not root.is_dir():
        raise CliError(f"--read-dir {directory} is not a directory")

    def read_file(path: str) -> str:
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise PermissionError(f"{path!r} is outside the shared directory")
        return target.read_text(encoding="utf-8")[:_READ_LIMIT]

    return HostTool(read_file, _READ_FILE_SCHEMA)


def _chat(args: argparse.Namespace) -> int:
    from ..llm import (
        OpenAICompatibleLLM,  # here: importing openai costs most of a second
    )

    settings = settings_for(args, llm_base_url=args.base_url, llm_model=args.model)
    llm = OpenAICompatibleLLM.from_settings(settings)
    session = args.session or f"chat-{uuid.uuid4().hex[:12]}"
    with AgentMemory.open(session, settings=settings) as memory:
        # With --json each turn is one JSON object on its own line (JSON Lines), tools included.
        tools = [_file_reader(args.read_dir)] if args.read_dir is not None else []
        conversation = Conversation(memory, llm, on_tool=None if args.json else _show_tool, tools=tools)
        print(f"mnemo chat: session {session}, model {settings.llm_model} (Ctrl-D to end)", file=sys.stderr)
        if memory.awaiting_review:
            print(f"{memory.awaiting_review} memory write(s) await your review: mnemo review list", file=sys.stderr)
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
