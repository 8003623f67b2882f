"""A client for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp, Ollama, ...)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import uuid
import weakref
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol

import openai

from ..errors import InvalidArgument
from .errors import LLMError, LLMNotConfigured
from .response import ChatResponse, ToolCall


class LLMSettings(Protocol):
    """The settings :meth:`OpenAICompatibleLLM.from_settings` reads (:class:`mnemo.config.Settings` has them)."""

    llm_base_url: str | None
    llm_model: str | None
    llm_api_key: str | None
    llm_timeout: float

#: Sent as the bearer token when no key is configured: local servers ignore it, and the ``openai``
#: package refuses to build a client without one.
NO_API_KEY = "no-key"

_MAX_REASON = 300

# ValueError: the ``openai`` package lets JSON decoding errors of a malformed 200 answer escape unwrapped.
_CLIENT_FAILURES = (openai.OpenAIError, ValueError)


class OpenAICompatibleLLM:
    """Chat completions with tool calls over HTTP, via the official ``openai`` package.

    Building one never touches the network; only :meth:`complete`, :meth:`acomplete` and
    :meth:`list_models` do. ``api_key=None`` sends :data:`NO_API_KEY` (what a local server expects); the
    ``OPENAI_API_KEY`` fallback lives in :meth:`from_settings`, so this constructor reads no environment.
    ``max_retries`` bounds the ``openai`` package's own retries (with its backoff) of timeouts,
    connection errors and 408, 409, 429 and 5xx answers, so one call takes at most about
    ``(max_retries + 1) * timeout`` plus backoff. ``request_options`` are extra body fields sent with
    every request (``{"temperature": 0}``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        *,
        max_retries: int = 1,
        request_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidArgument("base_url", f"must be an http:// or https:// URL, got {base_url!r}")
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgument("model", "must be a non-empty model name")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise InvalidArgument("timeout", f"must be a positive number of seconds, got {timeout!r}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise InvalidArgument("max_retries", f"must be a non-negative integer, got {max_retries!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.request_options: dict[str, Any] = dict(request_options or {})
        self._api_key = api_key or NO_API_KEY
        self._client = openai.OpenAI(**self._client_options())
        # One async client per event loop: pooled async connections belong to the loop that opened them,
        # and callers routinely run several loops over a client's life (asyncio.run per turn or per test).
        # A client per call would be simpler but costs ~40 ms each (the TLS trust store is loaded anew).
        self._async_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
        self._async_lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: LLMSettings, *, environ: Mapping[str, str] | None = None, **options: Any
    ) -> OpenAICompatibleLLM:
        """Build the client from mnemo settings (``llm_base_url``, ``llm_model``, ``llm_api_key``,
        ``llm_timeout``).

        ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` are used only for what mnemo's own settings leave
        unset. Raises :class:`LLMNotConfigured` naming what is missing; ``options`` go to the constructor.
        """
        environ = os.environ if environ is None else environ
        base_url = settings.llm_base_url or environ.get("OPENAI_BASE_URL")
        model = settings.llm_model
        if not base_url or not model:
            missing = []
            if not base_url:
                missing.append("an endpoint (llm_base_url: MNEMO_LLM_BASE_URL, [llm] base_url in config.toml, "
                               "or OPENAI_BASE_URL)")
            if not model:
                missing.append("a model (llm_model: MNEMO_LLM_MODEL or [llm] model in config.toml)")
            raise LLMNotConfigured("no LLM configured: set " + " and ".join(missing))
        api_key = settings.llm_api_key or environ.get("OPENAI_API_KEY")
        return cls(base_url, model, api_key, settings.llm_timeout, **options)

    def __repr__(self) -> str:
        # The key stays out of reprs and logs.
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def complete(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> ChatResponse:
        """Send one chat-completions request and return the first choice."""
        request = self._request(messages, tools)
        try:
            completion = self._client.chat.completions.create(**request)
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return _to_response(completion)

    async def acomplete(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> ChatResponse:
        """The same request as :meth:`complete`, without blocking the event loop."""
        request = self._request(messages, tools)
        client = await self._async_client()
        try:
            completion = await client.chat.completions.create(**request)
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return _to_response(completion)

    def list_models(self) -> list[str]:
        """The model ids the endpoint offers (``GET /models``); a cheap way to check the connection."""
        try:
            return [model.id for model in self._client.models.list()]
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc

    def close(self) -> None:
        """Release the pooled connections of synchronous calls; idempotent.

        Async connections are closed by their own event loop when it shuts down (``asyncio.run`` does
        this); :meth:`aclose` closes the running loop's ones at once.
        """
        self._client.close()

    async def aclose(self) -> None:
        """:meth:`close`, and close the running loop's async connections now; idempotent."""
        with self._async_lock:
            entry = self._async_clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()
        self.close()

    def __enter__(self) -> OpenAICompatibleLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def _async_client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        with self._async_lock:
            entry = self._async_clients.get(loop)
            if entry is not None:
                return entry[0]
            # Entries of finished loops were closed by their loop's shutdown (below); drop them.
            for finished in [known for known in self._async_clients if known.is_closed()]:
                del self._async_clients[finished]
            client = openai.AsyncOpenAI(**self._client_options())
            closer = _close_at_loop_shutdown(client)
            self._async_clients[loop] = (client, closer)
        # Starting the generator enrols it with this loop, whose shutdown_asyncgens() (run by asyncio.run)
        # then closes the client inside the loop that owns its connections: closing it later, from
        # another loop or from a garbage collector, fails with "Event loop is closed".
        await closer.__anext__()
        return client

    def _client_options(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "api_key": self._api_key, "timeout": self.timeout,
                "max_retries": self.max_retries}

    def _request(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> dict[str, Any]:
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
            raise InvalidArgument("messages", "must be a non-empty sequence of message dicts")
        request: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        # Some servers reject an empty tools list, so "no tools" omits the field.
        if tools:
            request["tools"] = list(tools)
        if self.request_options:
            request["extra_body"] = self.request_options
        return request

    def _error(self, exc: Exception) -> LLMError:
        where = f"{self.base_url} (model {self.model})"
        if isinstance(exc, openai.APIStatusError):
            return LLMError(f"LLM request to {where} failed: HTTP {exc.status_code}: {_status_message(exc)}",
                            status_code=exc.status_code)
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(f"LLM request to {where} timed out after {self.timeout:g}s")
        if isinstance(exc, openai.APIConnectionError):
            cause = _one_line(str(exc.__cause__ or exc)) or type(exc.__cause__ or exc).__name__
            return LLMError(f"cannot reach LLM endpoint {where}: {cause}")
        if not isinstance(exc, openai.OpenAIError):
            return LLMError(f"LLM endpoint {where} sent an unreadable response: {_one_line(str(exc))}")
        return LLMError(f"LLM request to {where} failed: {_one_line(str(exc)) or type(exc).__name__}")


async def _close_at_loop_shutdown(client: openai.AsyncOpenAI) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.close()


def _status_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping) and body.get("message"):
        return _one_line(str(body["message"]))
    text = body if isinstance(body, str) else exc.response.text
    return _one_line(text) or exc.response.reason_phrase or "no error message"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_REASON else flat[: _MAX_REASON - 1] + "…"


def _to_response(completion: Any) -> ChatResponse:
    """Our :class:`ChatResponse` from the ``openai`` completion object, tolerant of lax local servers."""
    choices = getattr(completion, "choices", None)
    if not choices:
        raise LLMError(f"LLM response has no choices: {_one_line(repr(completion))[:200]}")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise LLMError("LLM response choice has no message")
    calls = []
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        if function is None or not getattr(function, "name", None):
            raise LLMError(f"LLM sent a tool call without a function name (type {getattr(call, 'type', None)!r})")
        arguments = function.arguments
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            # Some local servers send the arguments object itself rather than its JSON text.
            arguments = json.dumps(arguments, ensure_ascii=False)
        # Tool results are matched to calls by id, so a server that omits ids gets one made up.
        calls.append(ToolCall(id=call.id or f"call_{uuid.uuid4().hex[:24]}", name=function.name,
                              arguments=arguments))
    usage = getattr(completion, "usage", None)
    return ChatResponse(
        content=message.content,
        tool_calls=tuple(calls),
        finish_reason=getattr(choice, "finish_reason", None),
        usage=usage.model_dump(exclude_none=True) if usage is not None else None,
    )
