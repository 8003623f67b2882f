"""The MCP server: one :class:`~mnemo.AgentMemory` per client connection, served over the official SDK.

It is another door onto the same functions an agent loop calls: the tools are
``AgentMemory.tools()`` run through ``AgentMemory.handle_tool_call`` (same schemas, validation, scan
and errors), plus the review tools (:mod:`mnemo.tools.review`) for hosts that confirm each call with the
user; what a client writes on its own is stamped as an MCP client's. The resources are the curated files, the frozen system prompt and memories by id, and the
prompt is the instructions :class:`~mnemo.Conversation` uses with the session's memory blocks. Nothing
here decides anything about memory; it only carries calls, keeps sessions and knows whose they are.

A connection (an stdio process, an HTTP ``Mcp-Session-Id``) is one mnemo session: opened on its first
request, for the user the transport vouched for, and closed (providers flushed) when the connection
ends. A request whose user is not the session's owner is refused, so a leaked session id does not
hand one user's memory to another.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..agent import AgentMemory
from ..curated.storage import FILENAMES
from ..curated.store import TARGETS
from ..errors import MnemoError
from ..loop import DEFAULT_INSTRUCTIONS
from ..provenance import Origin
from ..storage import open_curated
from ..tools._json import failure
from ..tools.review import REVIEW_TOOL_NAMES, REVIEW_TOOL_SCHEMAS, handle_review_call

log = logging.getLogger("mnemo.serve")

SERVER_NAME = "mnemo"
# Bigger arguments are refused before they reach a store: no tool needs them (curated memory holds a
# few kB, a memory is a paragraph) and parsing them would only cost memory.
MAX_ARGUMENT_BYTES = 256 * 1024

CURATED_URI = "mnemo://curated/{filename}"
SYSTEM_PROMPT_URI = "mnemo://system-prompt"
MEMORY_URI_PREFIX = "mnemo://memories/"
PROMPT_NAME = "use-memory"

# The request's user, put on the ASGI scope by the HTTP authentication (see mnemo.serve.http).
USER_SCOPE_KEY = "mnemo.user_id"
_STATE_KEY = "mnemo.session"
_OWNER_KEY = "mnemo.owner"
_OPENING_KEY = "mnemo.opening"

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
FORBIDDEN = -32001


class MemoryServer:
    """Serves mnemo over MCP. ``open_memory(session_key, user_id)`` opens the :class:`AgentMemory` for
    a new connection (so the home, scope and providers are the caller's choice); ``default_user`` is
    the user of a connection whose transport names none (stdio)."""

    def __init__(self, open_memory: Callable[[str, str], AgentMemory], *, default_user: str = "") -> None:
        self._open_memory = open_memory
        self.default_user = default_user
        self._open: dict[int, AgentMemory] = {}
        self._per_user: dict[str, dict[str, Any]] = {}
        self.server = _Server(
            SERVER_NAME,
            version=__version__,
            instructions=DEFAULT_INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
        )
        self.server.middleware.append(self._owner_only)

    # -- sessions -----------------------------------------------------------------------------

    async def _owner_only(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """Bind a connection to the user of its first message (``initialize`` included) and refuse
        every later message from anyone else: an HTTP session id alone opens nothing."""
        user_id = self._request_user(ctx)
        owner = _connection(ctx).state.setdefault(_OWNER_KEY, user_id)
        if owner != user_id:
            raise MCPError(FORBIDDEN, "this MCP session belongs to another user")
        return await call_next(ctx)

    async def _session(self, ctx: Any) -> AgentMemory:
        """The connection's mnemo session, opened on its first request for the connection's owner.

        A 2026-07-28 client sends every request as its own envelope, so each arrives on a connection
        of its own: those share one session per user, open until the server stops, rather than opening
        (and archiving) a session per request."""
        connection = _connection(ctx)
        user_id = connection.state.get(_OWNER_KEY, self._request_user(ctx))
        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            state, key, closes_with = self._per_user.setdefault(user_id, {}), None, None
        else:
            state, key, closes_with = connection.state, connection.session_id, connection.exit_stack
        session: AgentMemory | None = state.get(_STATE_KEY)
        if session is not None:
            return session
        # One lock per connection (or user): its concurrent first requests open one session, and
        # opening it (which may load an embedding model) holds up no other connection.
        async with state.setdefault(_OPENING_KEY, anyio.Lock()):
            session = state.get(_STATE_KEY)
            if session is None:
                session_key = f"mcp-{key or uuid.uuid4().hex}"
                session = await anyio.to_thread.run_sync(self._open_memory, session_key, user_id)
                session.model_origin = Origin.MCP  # what its client writes on its own is an MCP client's
                state[_STATE_KEY] = session
                self._open[id(session)] = session
                if closes_with is not None:
                    closes_with.push_async_callback(self._close, session)
        return session

    def _request_user(self, ctx: Any) -> str:
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None)
        if isinstance(scope, Mapping) and USER_SCOPE_KEY in scope:
            return str(scope[USER_SCOPE_KEY])
        return self.default_user

    async def _close(self, memory: AgentMemory) -> None:
        self._open.pop(id(memory), None)
        # Shielded by the SDK's exit stack; the flush runs in a thread so other connections keep going.
        await anyio.to_thread.run_sync(memory.close)

    def close_all(self) -> None:
        """Close every session still open (on shutdown, after the transport stopped)."""
        for memory in list(self._open.values()):
            memory.close()
        self._open.clear()
        self._per_user.clear()

    # -- tools --------------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        session = await self._session(ctx)
        schemas = [*session.tools(), *REVIEW_TOOL_SCHEMAS]
        return types.ListToolsResult(tools=[_mcp_tool(schema) for schema in schemas])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = await self._session(ctx)
        # MCP leaves arguments out of a call that has none; an explicit null is a value that is not an object,
        # which the tools refuse (it must not read as "no arguments" to a tool whose fields are all optional).
        arguments = params.arguments if "arguments" in params.model_fields_set else {}
        # Lone surrogates are the tools' to refuse (as invalid UTF-8, naming the field), not a crash here.
        size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > MAX_ARGUMENT_BYTES:
            result = failure(f"arguments too large: {size:,} bytes (at most {MAX_ARGUMENT_BYTES:,})", field="arguments")
        else:
            try:
                # A worker thread: SQLite and the embedder must not stall other connections. It is not
                # abandoned on cancel, so a client that disconnects mid-call still gets its write finished.
                # The request id names the call in the curated history, marked as coming through MCP.
                if params.name in REVIEW_TOOL_NAMES:
                    call = functools.partial(handle_review_call, session, params.name, arguments)
                else:
                    call = functools.partial(
                        session.handle_tool_call, params.name, arguments, tool_call_id=f"mcp:{ctx.request_id}"
                    )
                result = await anyio.to_thread.run_sync(call)
            except MnemoError as exc:
                result = failure(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            except Exception as exc:  # a bug must cost this call, never the server
                log.exception("tool %s failed", params.name)
                result = failure(f"internal error in tool {params.name!r}: {type(exc).__name__}")
        payload = json.loads(result)
        ok = payload.get("success") is not False
        if ok and params.name in ("memory", "review_approve"):
            await _notify_resources_changed(ctx)
        return types.CallToolResult(content=[types.TextContent(text=result)], is_error=not ok)

    # -- resources ----------------------------------------------------------------------------

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        session = await self._session(ctx)
        resources = [
            types.Resource(
                uri=CURATED_URI.format(filename=FILENAMES[target]),
                name=FILENAMES[target],
                description=f"The live curated {target} entries with their usage (what the next session's prompt shows).",
                mime_type="text/markdown",
            )
            for target in TARGETS
        ]
        if await anyio.to_thread.run_sync(session.system_prompt):
            resources.append(
                types.Resource(
                    uri=SYSTEM_PROMPT_URI,
                    name="system-prompt",
                    description="This session's frozen memory blocks, as an agent's system prompt carries them.",
                    mime_type="text/plain",
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def _list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        await self._session(ctx)
        template = types.ResourceTemplate(
            uri_template=MEMORY_URI_PREFIX + "{id}",
            name="memory",
            description="One memory of the graph by id, with its history fields (JSON).",
            mime_type="application/json",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        session = await self._session(ctx)
        uri = str(params.uri)
        text, mime = await anyio.to_thread.run_sync(self._resource_text, session, uri)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)])

    def _resource_text(self, memory: AgentMemory, uri: str) -> tuple[str, str]:
        for target in TARGETS:
            if uri == CURATED_URI.format(filename=FILENAMES[target]):
                return _curated_text(memory, target), "text/markdown"
        if uri == SYSTEM_PROMPT_URI:
            return memory.system_prompt(), "text/plain"
        if uri.startswith(MEMORY_URI_PREFIX):
            memory_id = uri[len(MEMORY_URI_PREFIX) :]
            try:
                found = memory.get_memory(memory_id)
            except MnemoError as exc:
                # Another scope's id is indistinguishable from one that never existed.
                raise MCPError(RESOURCE_NOT_FOUND, f"resource not found: {uri} ({exc})") from None
            return json.dumps(found.as_dict(), ensure_ascii=False), "application/json"
        raise MCPError(RESOURCE_NOT_FOUND, f"resource not found: {uri}")

    # -- prompt -------------------------------------------------------------------------------

    async def _list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        await self._session(ctx)
        prompt = types.Prompt(
            name=PROMPT_NAME, description="Use your long-term memory: instructions and what you remember."
        )
        return types.ListPromptsResult(prompts=[prompt])

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        session = await self._session(ctx)
        if params.name != PROMPT_NAME:
            raise MCPError(INVALID_PARAMS, f"unknown prompt {params.name!r} (prompts: {PROMPT_NAME})")
        # The same text Conversation puts in its system message: instructions, then the frozen blocks.
        blocks = await anyio.to_thread.run_sync(session.system_prompt)
        text = f"{DEFAULT_INSTRUCTIONS}\n\n{blocks}".strip()
        message = types.PromptMessage(role="user", content=types.TextContent(text=text))
        return types.GetPromptResult(description="Use your long-term memory.", messages=[message])


def _connection(ctx: Any) -> Any:
    # The SDK's per-connection state (scratch dict and exit stack); it has no public accessor yet.
    return ctx.session._connection


class _Server(Server[Any]):
    # The curated resources change when the memory tool edits them; say so in every handshake,
    # including the ones the HTTP session manager starts with the defaults.
    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        options = notification_options or NotificationOptions(resources_changed=True)
        return super().create_initialization_options(options, *args, **kwargs)


def _mcp_tool(schema: Mapping[str, Any]) -> types.Tool:
    function = schema["function"]
    return types.Tool(
        name=function["name"], description=function.get("description"), input_schema=function["parameters"]
    )


def _curated_text(memory: AgentMemory, target: str) -> str:
    """The target's entries as they are on disk now (another process may have edited them), with usage."""
    store = open_curated(memory.settings)
    store.load()
    failed = store.read_failure(target)
    if failed is not None:
        raise MCPError(RESOURCE_NOT_FOUND, f"{FILENAMES[target]} cannot be read: {failed}")
    return store.render_snapshot(target) or f"({FILENAMES[target]} is empty)"


async def _notify_resources_changed(ctx: Any) -> None:
    try:
        await ctx.session.send_resource_list_changed()
    except Exception as exc:  # the client may be gone; the edit itself is done and durable
        log.info("could not send resources/list_changed: %s", exc)
