"""A local HTTP server answering the Mem0 platform endpoints ``mem0.MemoryClient`` calls, shaped as Mem0's API
reference and quickstart show them, so the hosted mode runs the real SDK over real HTTP with no network.

It keeps what is added as memories verbatim (the platform's extraction is its own LLM's business, not what these
tests check) and is synchronous where the platform queues: an add answers ``{"status": "PENDING", "event_id"}``
as the v3 API does, with the memory already stored. Filters are the v2/v3 form (``{"AND": [{"user_id": ...},
...]}`` or a flat dict); search ranks by shared words. ``requests`` records every (method, path, body).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "m0-local-test-key"


class Mem0Platform:
    """The server, on an ephemeral loopback port; use it as a context manager. ``url`` is the SDK's ``host``."""

    def __init__(self) -> None:
        self.memories: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> Mem0Platform:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        with self._lock:
            self.requests.append((method, path, body))
            if method == "GET" and path == "/v1/ping/":
                return 200, {"status": "ok", "org_id": "org-local", "project_id": "proj-local", "user_email": "t@example.org"}
            if method == "POST" and path == "/v3/memories/add/":
                return self._add(body)
            if method == "POST" and path == "/v3/memories/search/":
                return 200, {"results": self._search(body)}
            if method == "POST" and path == "/v3/memories/":
                found = [m for m in self.memories.values() if _matches(m, body.get("filters") or {})]
                return 200, {"count": len(found), "next": None, "previous": None, "results": found}
            memory_id = re.fullmatch(r"/v1/memories/([^/]+)/", path)
            if memory_id and memory_id.group(1) in self.memories:
                if method == "DELETE":
                    del self.memories[memory_id.group(1)]
                    return 200, {"message": "Memory deleted successfully!"}
                return 200, self.memories[memory_id.group(1)]
            return 404, {"detail": f"no memory or route for {method} {path}"}

    def _add(self, body: dict[str, Any]) -> tuple[int, Any]:
        scope = {key: body[key] for key in ("user_id", "agent_id", "run_id") if body.get(key)}
        if not scope:
            return 400, {"detail": "at least one of user_id, agent_id, app_id or run_id is required"}
        now = datetime.now(UTC).isoformat()
        for message in body["messages"]:
            if message["role"] == "user":
                memory_id = str(uuid.uuid4())
                self.memories[memory_id] = {
                    "id": memory_id, "memory": message["content"], "metadata": body.get("metadata"),
                    "created_at": now, "updated_at": now, **scope,
                }  # fmt: skip
        return 200, {"message": "Memory processing has been queued", "status": "PENDING", "event_id": str(uuid.uuid4())}

    def _search(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        words = set(re.findall(r"\w+", body["query"].lower()))
        scored = []
        for memory in self.memories.values():
            shared = words & set(re.findall(r"\w+", memory["memory"].lower()))
            if shared and _matches(memory, body.get("filters") or {}):
                scored.append({**memory, "score": len(shared) / len(words)})
        return sorted(scored, key=lambda m: -m["score"])[: body.get("top_k", 10)]


def _matches(memory: dict[str, Any], filters: dict[str, Any]) -> bool:
    if "AND" in filters:
        return all(_matches(memory, condition) for condition in filters["AND"])
    return all(memory.get(key) == value for key, value in filters.items())


def _handler(platform: Mem0Platform) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            if self.headers.get("Authorization") != f"Token {API_KEY}":
                status, payload = 401, {"detail": "Invalid API key"}
            else:
                status, payload = platform.answer(self.command, self.path.split("?", 1)[0], body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve  # noqa: N815 - stdlib naming

    return Handler
