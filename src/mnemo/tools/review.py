"""The review tools, for hosts that show the user a confirmation before a tool runs (``mnemo serve`` offers
them; they are never in a model's own tool list, since a model must not approve what it wrote): list and
show the writes held for review, approve one by the digest the user was shown, reject one, and report
untrusted content that entered the model's context."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidArgument, MnemoError, excerpt
from ..graph.review import ReviewState
from ._json import check_required, failure, function_schema, parse_arguments, success

if TYPE_CHECKING:
    from ..graph.review import ReviewItem


class Reviewer(Protocol):
    """What the review tools call: the session's review queue and its taint report (an
    :class:`~mnemo.agent.AgentMemory`, which sits above the tools)."""

    def review_list(self, state: str | None = ..., *, query: str | None = ...) -> list[ReviewItem]: ...

    def review_show(self, item_id: str) -> ReviewItem: ...

    def review_approve(self, item_id: str, *, digest: str | None = ...) -> ReviewItem: ...

    def review_reject(self, item_id: str) -> ReviewItem: ...

    def report_untrusted(self, content: str, *, source: str, kind: str = ...) -> bool: ...

_ID = {"id": {"type": "string", "description": "The held write's id (from review_list)."}}

REVIEW_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    function_schema(
        "review_list",
        "List the memory writes held for the user's review (made after untrusted content was read), newest first.",
        {
            "state": {"type": "string", "enum": [*(s.value for s in ReviewState), "all"], "description": "default: pending"},
            "query": {"type": "string", "description": "Only writes whose content contains this text."},
        },
        [],
    ),
    function_schema(
        "review_show",
        "Show one held write: its content, where it came from, the untrusted content it follows, the threat scan's "
        "findings and the digest an approval must name.",
        _ID,
        ["id"],
    ),
    function_schema(
        "review_approve",
        "Apply a held write as the user's own. Only after the user has seen its content and agreed: pass the digest "
        "review_show gave, which binds the approval to that exact content.",
        {**_ID, "digest": {"type": "string", "description": "The digest review_show printed."}},
        ["id", "digest"],
    ),
    function_schema("review_reject", "Reject a held write: it is kept as rejected and never applied.", _ID, ["id"]),
    function_schema(
        "report_untrusted",
        "Tell memory that untrusted content (a tool result, web page, email, document) entered the model's context: "
        "the model's memory writes in this session then wait for the user's review.",
        {
            "source": {"type": "string", "description": "The tool or source it came from."},
            "content": {"type": "string", "description": "The content, or its start."},
        },
        ["source", "content"],
    ),
)
REVIEW_TOOL_NAMES: frozenset[str] = frozenset(s["function"]["name"] for s in REVIEW_TOOL_SCHEMAS)
_SCHEMAS = {schema["function"]["name"]: schema for schema in REVIEW_TOOL_SCHEMAS}


def _list(memory: Reviewer, args: Mapping[str, Any]) -> str:
    state = args.get("state", ReviewState.PENDING.value)
    items = memory.review_list(None if state == "all" else state, query=args.get("query"))
    return success(count=len(items), items=[item.as_dict() for item in items])


def _show(memory: Reviewer, args: Mapping[str, Any]) -> str:
    return success(item=memory.review_show(args["id"]).as_dict())


def _approve(memory: Reviewer, args: Mapping[str, Any]) -> str:
    item = memory.review_approve(args["id"], digest=args["digest"])
    return success(item=item.as_dict(), message="Approved: the write is in memory now.")


def _reject(memory: Reviewer, args: Mapping[str, Any]) -> str:
    item = memory.review_reject(args["id"])
    return success(item=item.as_dict(), message="Rejected: the write will never be applied.")


def _report(memory: Reviewer, args: Mapping[str, Any]) -> str:
    tainted = memory.report_untrusted(args["content"], source=args["source"])
    return success(tainted=tainted)


_HANDLERS: dict[str, Callable[[Reviewer, Mapping[str, Any]], str]] = {
    "review_list": _list,
    "review_show": _show,
    "review_approve": _approve,
    "review_reject": _reject,
    "report_untrusted": _report,
}


def handle_review_call(memory: Reviewer, name: str, arguments: Any) -> str:
    """Run review tool ``name`` on ``memory``'s session; a JSON string, a refusal naming its field."""
    handler = _HANDLERS.get(name)
    if handler is None:
        return failure(f"unknown review tool {excerpt(name)} (tools: {', '.join(_HANDLERS)})")
    try:
        args = parse_arguments(arguments, _SCHEMAS[name])
        check_required(args, _SCHEMAS[name])
        return handler(memory, args)
    except InvalidArgument as exc:
        return failure(f"invalid argument {exc.field}: {exc.problem}", field=exc.field)
    except MnemoError as exc:
        return failure(str(exc))
