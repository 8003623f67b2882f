"""Adapters that put mnemo inside a host agent or an agent framework: ``hermes`` (Hermes Agent's memory
provider), ``langgraph`` (LangGraph's store), ``openai_agents`` (the OpenAI Agents SDK's session and tools),
``pydantic_ai`` (a Pydantic AI toolset and context capability). Each imports its host or framework and is
imported only by applications that use it, never by mnemo itself, so mnemo depends on none of them."""
