"""What reaches the model in a later session, fed through the README's own agent loop (no LLM anywhere).

    python bench/e2e.py --data ../shared/data/locomo/locomo_dev.json
    python bench/e2e.py --data FILE --scale-messages 100000 --scale-memories 10000 --workdir /tmp/e2e

**Quality.** Each LoCoMo conversation is one user; all of them share one home (``--homes own``: each its own
home), and every user's questions are asked once all of them have been fed. Speaker A is the user, speaker B the
assistant: each run of A's turns is one user message, the run of B's turns after it the reply (a session
opening with B has an empty user message). Every LoCoMo session is one ``AgentMemory`` session:
``prepare_messages(user, history)`` then ``turn_complete(user, reply)`` per exchange, ``close()`` at its end,
nothing else (no messages handed to ``end_session``, no ``remember``); with ``--tool-calls`` each exchange is
handed to ``turn_complete`` whole (``messages=``), with one tool call and its result before the reply, as a
tool-using agent's turn is archived (``--tool-calls echo``: the result echoes the user's words, as a search
called with the message does). Then every scored question (categories
1-4 with evidence) is asked in a new session of the same user, and three doors are checked for the evidence
turns:

- **per-turn context**: the fenced block ``prepare_messages(question, [])`` adds (within
  ``graph_context_chars``, 1,500 by default);
- **recall()**: ``AgentMemory.recall(question)`` (8 results, the default);
- **session_search**: the tool called with the question, as a model that thinks to call it would.

With ``--deep`` (the ``deep`` extra installed), every question is asked again in a session opened with
``recall_deep=True`` (``--deep-ms`` sets its deadline): its per-turn context and ``recall(question, deep=True)``
are two more doors, and both calls are timed, with the share of them that kept the first ranking (the
cross-encoder had not answered by the deadline). For each ``recall`` door the bench also counts the questions
whose first result holds evidence, which is what a reordering changes.

An evidence turn counts as reached when what is shown overlaps its text: an archived message's passage that
covers at least part of that turn, or a memory extracted from the message holding it (credited to the turn
of that message sharing most words with it). ``any`` means some evidence turn of the question is reached,
``all`` every one.

**Speed.** ``prepare_messages`` per question in the run above, and, with ``--scale-messages``, in a home
holding that many archived messages (synthetic conversations, embedded) and ``--scale-memories`` graph
memories. That home is built through the stores' own bulk calls (``Archive.append_many``, ``embed_pending``,
every session recorded as extracted, ``MemoryGraph.remember_many``: everything embedded, as an agent leaves
it), not the agent loop, since feeding 100k messages through it would take hours;
only the timed calls go through ``AgentMemory``. It is kept in ``--workdir`` and reused when present. A home
with more memories than one already built there for the same message count is grown from a copy of it: both
come from one deterministic stream (the messages, then the memories), so the copy's archive and memories are
the larger home's own, and only the memories it lacks are written and embedded (embedding 100k messages
again would take an hour here). Every vector is a real MiniLM embedding of its text.

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _reach import TOOL_RESULTS, Door, Message, Tally, ask_all, deep_options, deep_settings, exchanges, feed  # noqa: E402
from archive import Synth, _percentile, _scored_questions, _sessions, _table  # noqa: E402
from mnemo import AgentMemory  # noqa: E402
from mnemo.embeddings import MiniLMEmbedder  # noqa: E402
from mnemo.graph.backfill import archived_sessions, backfill  # noqa: E402
from mnemo.scope import Scope  # noqa: E402
from mnemo.storage import open_archive, open_graph  # noqa: E402


def _turn(turn: dict) -> str:
    text = str(turn.get("text", ""))
    if turn.get("blip_caption"):
        text += f" [shares image: {turn['blip_caption']}]"
    return text


def _conversation(sample: dict) -> tuple[str, list[tuple[str, list[tuple[Message, Message]]]]]:
    """A LoCoMo sample as the user and their sessions of exchanges (speaker A is the user)."""
    conversation = sample["conversation"]
    user = str(sample.get("sample_id") or conversation.get("speaker_a"))
    sessions = [
        (key, list(exchanges([(t.get("speaker") == conversation["speaker_a"], str(t.get("dia_id")), _turn(t)) for t in turns])))
        for key, turns, _when in _sessions(conversation)
    ]  # fmt: skip
    return user, sessions


# LoCoMo's question categories, by the numbers its data gives them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def bench_quality(
    path: Path,
    workdir: Path,
    conversations: int | None,
    deep: dict | None = None,
    homes: str = "shared",
    tool_calls: str | None = None,
) -> dict:
    samples = json.loads(path.read_text(encoding="utf-8"))[:conversations]
    tally = Tally()
    by_category: dict[str, Door] = {}
    turn_ms: list[float] = []
    started = time.perf_counter()
    fed = []
    for index, sample in enumerate(samples):
        home = workdir / ("locomo-home" if homes == "shared" else f"locomo-home-{index}")
        home.mkdir(parents=True, exist_ok=True)
        record, fed_ms = feed(home, *_conversation(sample), tool_calls=tool_calls)
        turn_ms += fed_ms
        fed.append((home, record, sample))
    # Asked once every user is in: in a shared home each user's ranking meets the others' words in the
    # full-text statistics, as in a gateway that has been running a while.
    for home, record, sample in fed:
        questions = [(question, (category, evidence)) for category, evidence, question, _qa in _scored_questions(sample)]
        for (category, evidence), shown in ask_all(home, record, questions, deep=deep):
            tally.add(set(evidence), shown)
            if not shown.deep:
                by_category.setdefault(CATEGORIES[category], Door()).add(set(evidence), shown.doors["per-turn context"])
    doors, ask_ms, chars = tally.doors, tally.ms, tally.chars
    rows = [[name, f"{statistics.fmean(d.any):.3f}", f"{statistics.fmean(d.all):.3f}"] for name, d in doors.items()]
    print(
        f"\n{len(doors['recall()'].any)} questions, {len(samples)} conversations, {time.perf_counter() - started:.0f} s"
    )
    _table(rows, ["door", "evidence reached (any)", "evidence reached (all)"])
    _table(
        [[name, str(len(d.any)), f"{statistics.fmean(d.any):.3f}", f"{statistics.fmean(d.all):.3f}"] for name, d in by_category.items()],
        ["category (per-turn context)", "questions", "any", "all"],
    )  # fmt: skip
    _table(tally.first_rows(), ["door", "first result holds evidence"])
    speed = [
        ["prepare_messages while feeding", f"{_percentile(turn_ms, 50):.1f}", f"{_percentile(turn_ms, 95):.1f}"],
        ["prepare_messages per question", f"{_percentile(ask_ms, 50):.1f}", f"{_percentile(ask_ms, 95):.1f}"],
    ]
    _table(speed, ["call", "p50 ms", "p95 ms"])
    _table(tally.call_rows(), ["call", "p50 ms", "p95 ms", "first ranking kept"])
    print(
        f"recalled characters per question (the lines graph_context_chars bounds; the fence adds ~190): mean {statistics.fmean(chars):.0f}, p95 {_percentile(chars, 95):.0f}, max {max(chars)}"
    )
    result = {
        f"{name}_{kind}": round(statistics.fmean(getattr(d, kind)), 3)
        for name, d in doors.items()
        for kind in ("any", "all")
    }
    result |= {f"per_turn_{name.replace('-', '_')}_all": round(statistics.fmean(d.all), 3) for name, d in by_category.items()}
    result |= {
        "questions": len(ask_ms),
        "feed_ms_p50": round(_percentile(turn_ms, 50), 2), "feed_ms_p95": round(_percentile(turn_ms, 95), 2),
        "ask_ms_p50": round(_percentile(ask_ms, 50), 2), "ask_ms_p95": round(_percentile(ask_ms, 95), 2),
        "context_chars_mean": round(statistics.fmean(chars)), "context_chars_max": max(chars),
    }  # fmt: skip
    return result | tally.call_summary()


SCALE_USER = "scale"
SESSION_LENGTH = 100


def _build_scale(home: Path, messages: int, memories: int) -> None:
    """The synthetic home (see the module docstring), built once."""
    marker = home / f".built-{messages}-{memories}"
    if marker.exists():
        return
    synth = Synth()
    scope = Scope(user_id=SCALE_USER)
    started = time.perf_counter()
    smaller = _smaller_home(home.parent, messages, memories)
    if smaller is not None:
        _grow_from(smaller, home, synth, messages, memories)
        print(f"scale home grown from {smaller.name} in {time.perf_counter() - started:.0f} s", flush=True)
        marker.touch()
        return
    home.mkdir(parents=True, exist_ok=True)
    archive = open_archive(home / "mnemo.db", embedder=MiniLMEmbedder(), scope=scope)
    try:
        for index in range(messages // SESSION_LENGTH):
            session_id = f"scale-{index}"
            archive.start_session(session_id, exist_ok=True)
            archive.append_many(session_id, synth.session(SESSION_LENGTH))
            archive.end_session(session_id)
        print(f"archived {messages} messages in {time.perf_counter() - started:.0f} s; embedding them", flush=True)
        while archive.embed_pending(limit=2000):
            pass
    finally:
        archive.close()
    _settle(home, scope, synth, memories)
    print(f"scale home built in {time.perf_counter() - started:.0f} s", flush=True)
    marker.touch()


def _smaller_home(workdir: Path, messages: int, memories: int) -> Path | None:
    """The built home with as many messages and the most memories short of ``memories``, if any."""
    built = [
        (int(path.name.rsplit("-", 1)[1]), path.parent)
        for path in workdir.glob(f"scale-{messages}-*/.built-{messages}-*")
        if int(path.name.rsplit("-", 1)[1]) < memories
    ]
    return max(built)[1] if built else None


def _grow_from(smaller: Path, home: Path, synth: Synth, messages: int, memories: int) -> None:
    """Build ``home`` as a copy of ``smaller`` plus the memories it lacks. The two would be built from one
    deterministic stream (the archive's messages, then the memories), so the smaller home's memories are the
    first of the larger one's and its archive is the same: the copy spares embedding 100k messages again
    (an hour on these two cores). ``synth`` is run through what the copy already holds."""
    had = int(smaller.name.rsplit("-", 1)[1])
    home.mkdir(parents=True, exist_ok=True)
    source = sqlite3.connect(smaller / "mnemo.db")
    target = sqlite3.connect(home / "mnemo.db")
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()
    if (smaller / "cache").is_dir():  # the model's converted weights
        shutil.copytree(smaller / "cache", home / "cache", dirs_exist_ok=True)
    for _ in range(messages // SESSION_LENGTH):
        synth.session(SESSION_LENGTH)
    _settle(home, Scope(user_id=SCALE_USER), synth, memories, had=had)


def _settle(home: Path, scope: Scope, synth: Synth, memories: int, had: int = 0) -> None:
    """The steady state an agent leaves: every session's messages recorded as extracted when it ended (by an
    extractor that keeps nothing: the synthetic chatter would give some 33k memories, not the number asked
    for), ``memories`` remembered (the first ``had`` of them already are), everything embedded (its
    providers embed after each turn)."""
    archive = open_archive(home / "mnemo.db", scope=scope)
    graph = open_graph(home / "mnemo.db", scope=scope, embedder=MiniLMEmbedder())
    try:
        backfill(graph, archive, archived_sessions(archive), extractor=lambda batch: [])
        batch = [{"content": synth.message("user")["content"], "memory_type": "fact"} for _ in range(memories)]
        batch = batch[had:]
        for start in range(0, len(batch), 1000):
            graph.remember_many(batch[start : start + 1000])
        graph.embed_pending()
    finally:
        graph.close()
        archive.close()


def bench_scale(workdir: Path, messages: int, memories: int, questions: int) -> dict:
    home = workdir / f"scale-{messages}-{memories}"
    _build_scale(home, messages, memories)
    queries = Synth().queries(questions)
    timings: list[float] = []
    chars: list[int] = []
    with AgentMemory.open("scale-probe", home=home, user_id=SCALE_USER) as memory:
        for warm in queries[:10]:
            memory.prepare_messages(warm, [])
        for query in queries:
            started = time.perf_counter()
            messages_out = memory.prepare_messages(query, [])
            timings.append((time.perf_counter() - started) * 1000)
            chars.append(len(messages_out[-1]["content"]) - len(query))
    rows = [
        [
            f"{messages:,} messages + {memories:,} memories",
            f"{_percentile(timings, 50):.1f}",
            f"{_percentile(timings, 95):.1f}",
            f"{statistics.fmean(chars):.0f}",
        ]
    ]
    _table(rows, ["home", "prepare_messages p50 ms", "p95 ms", "context chars (mean)"])
    return {"scale_ms_p50": round(_percentile(timings, 50), 2), "scale_ms_p95": round(_percentile(timings, 95), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="LoCoMo JSON (../shared/data/locomo/locomo_dev.json)")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument(
        "--homes", choices=("shared", "own"), default="shared",
        help="every user in one home (a gateway, the default) or each in a home of its own (a personal agent)",
    )
    parser.add_argument(
        "--tool-calls", nargs="?", const="status", choices=TOOL_RESULTS,
        help="hand every exchange over whole, with a tool call and its result before the reply (a tool-using agent);"
        " the result is a constant status (the default) or echoes the user's words",
    )
    deep_options(parser)
    parser.add_argument(
        "--scale-messages", type=int, default=0, help="also time a home with this many archived messages"
    )
    parser.add_argument("--scale-memories", type=int, default=10_000)
    parser.add_argument("--scale-questions", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None, help="keep homes here (the scale home is reused)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        result: dict = {}
        if args.data:
            run = workdir / f"run-{int(time.time())}"
            result |= bench_quality(args.data, run, args.conversations, deep_settings(args), args.homes, args.tool_calls)
        if args.scale_messages:
            result |= bench_scale(workdir, args.scale_messages, args.scale_memories, args.scale_questions)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
