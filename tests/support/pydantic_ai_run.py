"""One run of a real Pydantic AI agent on mnemo (memory_toolset and MnemoContext), driven by Pydantic AI's
FunctionModel with a script: call one tool, then answer with what the tool returned and what mnemo's
per-turn context put before it. Run as a script so each run is a process of its own.

``python -m support.pydantic_ai_run HOME USER PROMPT TOOL ARGUMENTS_JSON`` prints, as JSON, the answer and
every user prompt the model was sent.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mnemo import AgentMemory
from mnemo.integrations.pydantic_ai import MnemoContext, memory_toolset


def scripted(tool: str, arguments: dict[str, Any], prompts: list[str]) -> FunctionModel:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.extend(
            p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
        )
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(json.dumps(returned[0].model_response_object(), default=str))])
        return ModelResponse(parts=[ToolCallPart(tool, arguments)])

    return FunctionModel(reply)


def run(home: str, user: str, prompt: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    prompts: list[str] = []
    with AgentMemory.open(
        f"{user}-{tool}", home, user_id=user, graph_embedder="none", archive_embedder="none"
    ) as memory:
        agent = Agent(
            scripted(tool, arguments, prompts), toolsets=[memory_toolset(memory)], capabilities=[MnemoContext(memory)]
        )
        result = agent.run_sync(prompt)
    return {"answer": result.output, "prompts": prompts}


if __name__ == "__main__":
    home, user, prompt, tool, arguments = sys.argv[1:6]
    print(json.dumps(run(home, user, prompt, tool, json.loads(arguments))))
