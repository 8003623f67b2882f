"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol.

Tests drive mnemo's LLM client (and anything built on it) against this server instead of mocking the
client object, so the bytes on the wire are the ones a real endpoint would see and send.

Usage::

    with OpenAIServer([Reply.tool_calls(("memory", {"action": "add"})), Reply.text("done")]) as server:
        llm = OpenAICompatibleLLM(server.base_url, "test-model", max_retries=0)
        ...
        assert server.requests[0]["tools"] == [...]

Replies are consumed in order; a ``handler(body) -> Reply`` can answer instead (it sees every request
body, so it can react to tool results). When neither has anything left the server answers HTTP 500 with
an OpenAI-style error naming the problem, so a test fails loudly rather than hanging.

``POST /v1/embeddings`` answers with deterministic vectors (:func:`embed`: texts sharing words point the
same way), or with ``embedding_fault`` when a test sets one (an error, after its delay).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODEL = "test-model"
EMBEDDING_DIMS = 64


def embed(text: str, dims: int = EMBEDDING_DIMS) -> list[float]:
    """A unit vector for ``text``: each lower-cased word adds one to a dimension picked by its hash, so texts
    sharing words are close by cosine, the way a real embedding model's neighbours share meaning."""
    vector = [0.0] * dims
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % dims] += 1.0
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return [value / norm for value in vector]


@dataclass(frozen=True)
class Reply:
    """One scripted answer to ``POST /v1/chat/completions``.

    Build it with :meth:`text`, :meth:`tool_calls`, :meth:`error` or :meth:`raw`. ``delay`` seconds are
    waited before answering (the wait ends early when the server stops, so a slow reply never holds up
    teardown).
    """

    content: str | None = None
    calls: tuple[tuple[str, str], ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None
    status: int = 200
    error_body: Mapping[str, Any] | None = None
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def text(cls, content: str, **options: Any) -> Reply:
        """A plain assistant message, ``finish_reason`` "stop"."""
        return cls(content=content, **options)

    @classmethod
    def tool_calls(cls, *calls: tuple[str, Mapping[str, Any] | str], content: str | None = None,
                   **options: Any) -> Reply:
        """An assistant message calling tools; each call is ``(name, arguments)``.

        ``arguments`` is a dict (serialised as the model would) or a raw string sent verbatim, which
        lets a test send malformed JSON the way a weak model sometimes does.
        """
        encoded = tuple(
            (name, arguments if isinstance(arguments, str) else json.dumps(arguments))
            for name, arguments in calls
        )
        return cls(content=content, calls=encoded, **options)

    @classmethod
    def error(cls, status: int, message: str, *, type: str = "server_error", code: str | None = None,
              **options: Any) -> Reply:
        """An HTTP error with the body OpenAI sends: ``{"error": {"message", "type", "param", "code"}}``."""
        return cls(status=status, error_body={"message": message, "type": type, "param": None, "code": code},
                   **options)

    @classmethod
    def raw(cls, status: int, body: bytes, *, content_type: str = "application/json",
            **options: Any) -> Reply:
        """Exactly these bytes, for tests of malformed responses."""
        headers = {"Content-Type": content_type, **options.pop("headers", {})}
        return cls(status=status, body=body, headers=headers, **options)


Handler = Callable[[dict[str, Any]], Reply]


class _ThreadingServer(ThreadingHTTPServer):
    # Daemon handler threads that are not joined: a reply stuck in ``delay`` must not block stop().
    daemon_threads = True
    block_on_close = False
    # The default backlog of 5 drops SYNs under a burst of concurrent clients, costing 1 s retransmits.
    request_queue_size = 128


class OpenAIServer:
    """A threaded chat-completions server on an ephemeral loopback port; use it as a context manager.

    ``handler`` (settable) answers once the queued replies run out. ``requests`` holds every
    chat-completions request body received, parsed, in arrival order, and ``headers`` the HTTP headers
    of each (names lower-cased), at the same index. ``embedding_requests`` holds the embeddings request
    bodies; ``embedding_fault`` (settable), when set, answers them instead of the vectors.
    """

    def __init__(self, replies: Iterable[Reply] = (), *, handler: Handler | None = None,
                 model: str = DEFAULT_MODEL) -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._replies: deque[Reply] = deque(replies)
        self.handler = handler
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_fault: Reply | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # lifecycle

    def start(self) -> OpenAIServer:
        """Bind 127.0.0.1 on a free port and serve in a background thread."""
        httpd = _ThreadingServer(("127.0.0.1", 0), _make_request_handler(self))
        self._httpd = httpd
        self._port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                        name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; idempotent."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # what tests use

    @property
    def port(self) -> int:
        """The bound port; after :meth:`stop` it stays known, which gives tests a port nobody listens on."""
        assert self._port is not None, "server was never started"
        return self._port

    @property
    def base_url(self) -> str:
        """The URL a client takes as its base, ending in ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._replies)

    # serving

    def _next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._replies:
                return self._replies.popleft()
        if self.handler is not None:
            try:
                return self.handler(body)
            except Exception as exc:  # a broken test handler must surface as an answer, not a dropped socket
                return Reply.error(500, f"test server handler raised {exc!r}")
        return Reply.error(500, f"test server has no scripted reply left for request #{len(self.requests)}")

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any] | Reply:
        with self._lock:
            self.embedding_requests.append(body)
            fault = self.embedding_fault
        if fault is not None:
            return fault
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            return Reply.error(400, "'input' must be a string or a list of strings", type="invalid_request_error")
        dims = body.get("dimensions") or EMBEDDING_DIMS
        return {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": embed(text, dims)} for i, text in enumerate(texts)],
            "model": body.get("model") or self.model,
            "usage": {"prompt_tokens": sum(len(text.split()) for text in texts),
                      "total_tokens": sum(len(text.split()) for text in texts)},
        }

    def _completion(self, reply: Reply, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.calls:
            message["tool_calls"] = [
                {"id": f"call_{next(self._ids):06d}", "type": "function",
                 "function": {"name": name, "arguments": arguments}}
                for name, arguments in reply.calls
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.calls else "stop")
        usage = dict(reply.usage) if reply.usage is not None else {
            "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return {
            "id": f"chatcmpl-{next(self._ids):06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": usage,
        }

    def _chunks(self, completion: dict[str, Any]) -> list[dict[str, Any]]:
        """The streamed form of a completion: role, content, each tool call, then the finish reason."""
        choice = completion["choices"][0]
        message = choice["message"]
        common = {key: completion[key] for key in ("id", "created", "model")}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**common, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        if message["content"]:
            chunks.append(chunk({"content": message["content"]}))
        for index, call in enumerate(message.get("tool_calls", [])):
            chunks.append(chunk({"tool_calls": [{"index": index, **call}]}))
        chunks.append(chunk({}, choice["finish_reason"]))
        return chunks


def _make_request_handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class _RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; with Nagle on, delayed ACKs add ~40 ms per reply.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass  # keep pytest output clean

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            if self.path.rstrip("/") == "/v1/models":
                self._send_json(200, {"object": "list", "data": [
                    {"id": server.model, "object": "model", "created": 0, "owned_by": "mnemo-tests"}]})
            else:
                self._send_error(404, f"no route for GET {self.path}", "invalid_request_error")

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            route = self.path.rstrip("/")
            if route not in ("/v1/chat/completions", "/v1/embeddings"):
                self._send_error(404, f"no route for POST {self.path}", "invalid_request_error")
                return
            try:
                body = json.loads(raw)
            except json.JSONDecodeError as exc:
                self._send_error(400, f"request body is not JSON: {exc.msg}", "invalid_request_error")
                return
            if route == "/v1/embeddings":
                answer = server._embeddings(body)
                if isinstance(answer, Reply):
                    self._answer(answer, body)
                else:
                    self._send_json(200, answer)
                return
            reply = server._next_reply(body, {name.lower(): value for name, value in self.headers.items()})
            self._answer(reply, body)

        def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
            if reply.delay:
                server._wait(reply.delay)
            if reply.body is not None:
                self._send(reply.status, reply.body, reply.headers)
            elif reply.error_body is not None:
                self._send_json(reply.status, {"error": dict(reply.error_body)}, reply.headers)
            else:
                completion = server._completion(reply, body.get("model") or server.model)
                if body.get("stream"):
                    self._send_stream(server._chunks(completion), reply.headers)
                else:
                    self._send_json(reply.status, completion, reply.headers)

        def _send_error(self, status: int, message: str, kind: str) -> None:
            self._send_json(status, {"error": {"message": message, "type": kind, "param": None,
                                               "code": None}})

        def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] = {}) -> None:
            self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **headers})

        def _send(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, chunks: list[dict[str, Any]], headers: Mapping[str, str]) -> None:
            self.send_response(200)
            for name, value in {"Content-Type": "text/event-stream", **headers}.items():
                self.send_header(name, value)
            # No Content-Length: the stream ends when the connection closes.
            self.send_header("Connection", "close")
            self.end_headers()
            for payload in chunks:
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return _RequestHandler
