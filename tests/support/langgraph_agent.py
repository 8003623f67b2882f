"""One run of a real LangGraph agent (LangGraph's prebuilt ReAct graph with LangMem's memory tools) on a
MnemoStore, driven by a scripted chat model; run as a script so each run is a process of its own.

``python -m support.langgraph_agent HOME USER remember TEXT`` has the model save TEXT with LangMem's
``manage_memory`` tool; ``... recall QUERY`` has it call ``search_memory``. Prints the tool results as JSON.
"""

from __future__ import annotations

import json
import sys
import warnings

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langmem import create_manage_memory_tool, create_search_memory_tool

from mnemo.integrations.langgraph import MnemoStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
    from langgraph.prebuilt import create_react_agent

NAMESPACE = ("{langgraph_user_id}", "memories")


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering from its script whatever tools it is given."""

    def bind_tools(self, tools, **kwargs):
        return self


def run(home: str, user: str, action: str, text: str) -> list[str]:
    call = (
        {"name": "manage_memory", "args": {"content": text, "action": "create"}, "id": "call-1"}
        if action == "remember"
        else {"name": "search_memory", "args": {"query": text}, "id": "call-1"}
    )
    model = ScriptedChatModel(messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="Done.")]))
    tools = [create_manage_memory_tool(namespace=NAMESPACE), create_search_memory_tool(namespace=NAMESPACE)]
    with MnemoStore.from_home(home, graph_embedder="none") as store:
        store.setup()
        agent = create_react_agent(model, tools=tools, store=store)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            state = agent.invoke(
                {"messages": [{"role": "user", "content": text}]}, config={"configurable": {"langgraph_user_id": user}}
            )
    return [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]


if __name__ == "__main__":
    print(json.dumps(run(*sys.argv[1:5])))
