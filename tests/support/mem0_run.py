"""One turn of an agent on mnemo with the Mem0 provider, run as a process of its own the way a second run
of an application starts: the home's ``config.toml`` and ``.env`` say how to reach Mem0's models.

``python -m support.mem0_run HOME USER SESSION MESSAGE`` opens the session as ``USER``, prepares the turn,
completes it, closes (which lets the provider finish adding the turn) and prints, as JSON, the message the
model would have been sent and whether Mem0's telemetry was on.

:func:`extracting_model` plays Mem0's extraction model on an :class:`~support.openai_server.OpenAIServer`.
"""

from __future__ import annotations

import json
import sys

from mnemo import AgentMemory
from mnemo.providers.mem0 import Mem0Provider
from support.openai_server import Reply


def extracting_model(body: dict) -> Reply:
    """Mem0's extraction model: every line the user said in the new messages is one fact, as the JSON Mem0 asks for."""
    prompt = body["messages"][-1]["content"]
    new = prompt.split("## New Messages", 1)[-1].split("\n## ", 1)[0]
    facts = [line.removeprefix("user: ").strip() for line in new.splitlines() if line.startswith("user: ")]
    return Reply.text(json.dumps({"memory": [{"text": fact} for fact in facts if fact]}))


def main(home: str, user: str, session: str, message: str) -> None:
    with AgentMemory.open(
        session, home, user_id=user, providers=[Mem0Provider()], archive_enabled=False, graph_enabled=False
    ) as memory:
        sent = memory.prepare_messages(message, [])[-1]["content"]
        memory.turn_complete(message, "Noted.")
    telemetry = sys.modules["mem0.memory.telemetry"].MEM0_TELEMETRY
    print(json.dumps({"sent": sent, "telemetry": telemetry, "degraded": [str(d) for d in memory.degraded]}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
