"""One run of a real OpenAI Agents SDK agent on mnemo: its history in a MnemoSession, mnemo's tools as
FunctionTools, and a scripted Model (the SDK's Model interface, no network) that calls one tool then
answers with what the tool returned. Run as a script so each run is a process of its own.

``python -m support.openai_agents_run HOME USER SESSION TOOL ARGUMENTS_JSON`` prints, as JSON, the tool's
output and the session's items after the run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from mnemo import AgentMemory
from mnemo.integrations.openai_agents import MnemoSession, memory_tools


class ScriptedModel(Model):
    """Calls ``tool`` with ``arguments`` on its first turn; on the next, answers with the tool's output."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool, self.arguments = tool, arguments

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None, **kwargs):  # fmt: skip
        outputs = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if not outputs or outputs[-1]["call_id"] != "call-" + self.tool:
            call = ResponseFunctionToolCall(
                type="function_call", call_id="call-" + self.tool, name=self.tool, arguments=json.dumps(self.arguments)
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text=str(outputs[-1]["output"]), annotations=[])
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("this scripted model does not stream")


async def run(home: str, user: str, session_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    set_tracing_disabled(True)
    with AgentMemory.open(session_id, home, user_id=user, graph_embedder="none", archive_embedder="none") as memory:
        agent = Agent(name="assistant", model=ScriptedModel(tool, arguments), tools=memory_tools(memory))
        session = MnemoSession(session_id, home, user_id=user)
        try:
            result = await Runner.run(agent, f"please {tool}", session=session)
            items = await session.get_items()
        finally:
            session.close()
    return {"answer": result.final_output, "items": items}


if __name__ == "__main__":
    home, user, session_id, tool, arguments = sys.argv[1:6]
    print(json.dumps(asyncio.run(run(home, user, session_id, tool, json.loads(arguments)))))
