"""What mnemo's framework doors (mnemo.integrations) cost, and LangGraph's store at scale (no LLM anywhere).

    python bench/integrations.py --data ../shared/data/locomo/locomo_dev.json     # 5,000 items: about 2 min
    python bench/integrations.py --data FILE --items 100000                       # the scale run
    python bench/integrations.py --ops 500 --skip-scale --skip-locomo             # the overhead table only

Needs the frameworks (the `test` and `openai-agents` extras) and `pysqlite3-binary`: LangGraph's SQLite store
searches by meaning through the sqlite-vec extension, which Python's own sqlite3 here cannot load. A
section whose framework is missing is skipped with a note.

1. **Overhead.** Each adapter operation against the direct mnemo call it stands for, interleaved, ``--ops``
   pairs after a warm-up, the graph's embedder off on both sides (the same work either way): LangGraph's
   store put/get/search against ``MemoryGraph`` remember/get/recall on the namespace's scope (1,000 items
   in it); the Agents SDK session's add/get against ``Archive.append_many`` / ``messages``, and a
   ``memory_tools`` call against ``AgentMemory.handle_tool_call``; Pydantic AI's toolset through a real
   agent run against the same run with a plain tool calling ``AgentMemory.recall``, and ``MnemoContext``'s
   run against a bare run plus ``prepare_messages`` and ``turn_complete``. The median overhead is the
   median of per-pair differences (a slow moment of the machine hits both sides of a pair); at p95 it is
   the adapter's p95 minus the direct call's.
2. **Scale.** ``--items`` values (LoCoMo turns under many speaker names) in one namespace of MnemoStore and of
   LangGraph's ``SqliteStore`` (sqlite-vec index, the same MiniLM vectors), loaded in batches of 500; then
   ``search(namespace, query=question, limit=10)`` for 200 LoCoMo questions on each.
3. **Recall.** LoCoMo through both stores: one namespace per conversation, an item per turn, every category
   1-4 question with evidence asked with ``search(limit=10)``; the FTS5 OR baseline of bench/archive.py in
   the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _tables import print_table  # noqa: E402
from archive import _baseline, _scored_questions, _Scores, _session_of, _sessions, _turn_text  # noqa: E402
from locomo import _visible  # noqa: E402
from mnemo import AgentMemory  # noqa: E402
from mnemo.integrations.langgraph import namespace_scope  # noqa: E402
from mnemo.storage import open_archive, open_graph

NAMESPACE = ("alice", "assistant")
WARMUP = 20
BATCH = 500
SCALE_QUERIES = 200
NAMES = ["Ava", "Ben", "Chloe", "Dev", "Elif", "Femi", "Gita", "Hugo", "Ines", "Jon", "Kai", "Lena", "Milo", "Nora",
         "Omar", "Pia", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Vik", "Wren", "Xiu", "Yara", "Zane"]  # fmt: skip


def _ms(seconds: float) -> float:
    return seconds * 1000


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    result = call()
    if inspect.isawaitable(result):
        await result
    return _ms(time.perf_counter() - started)


async def _pairs(
    n: int, direct: Callable[[int], Any], adapter: Callable[[int], Any]
) -> tuple[list[float], list[float]]:
    """``n`` interleaved timings of ``direct(i)`` and ``adapter(i)`` (sync or async), after a warm-up."""
    for i in range(WARMUP):
        await _timed(lambda: direct(-1 - i))
        await _timed(lambda: adapter(-1 - i))
    plain, wrapped = [], []
    for i in range(n):
        plain.append(await _timed(lambda: direct(i)))
        wrapped.append(await _timed(lambda: adapter(i)))
    return plain, wrapped


def _row(name: str, plain: list[float], wrapped: list[float]) -> list[str]:
    # The median of the per-pair differences is robust to a slow moment of the machine; at p95 the paired
    # difference measures the scheduler more than the adapter, so it is the gap between the two p95s.
    extra = statistics.median(w - p for p, w in zip(plain, wrapped))
    direct, adapter = (_p(plain, 0.5), _p(plain, 0.95)), (_p(wrapped, 0.5), _p(wrapped, 0.95))
    return [name, *(f"{v:.3f}" for v in (*direct, *adapter, extra, adapter[1] - direct[1]))]


def _sentences() -> Iterator[str]:
    subjects = ["The user", "Alice", "Her brother", "The team", "My neighbour", "The landlord", "Our client"]
    verbs = ["prefers", "mentioned", "asked about", "booked", "cancelled", "recommended", "disliked"]
    objects = ["green tea", "the Lisbon trip", "a red bicycle", "Thursday's meeting", "the jazz concert",
               "a standing desk", "the pottery class", "sourdough bread", "the museum pass", "a vegan menu"]  # fmt: skip
    for n, (s, v, o) in enumerate(itertools.cycle(itertools.product(subjects, verbs, objects))):
        yield f"{s} {v} {o} (note {n})"


# -- 1. overhead ---------------------------------------------------------------------------------------


async def _langgraph_rows(home: Path, n: int) -> list[list[str]]:
    from mnemo.integrations.langgraph import MnemoStore

    texts = _sentences()
    with (
        MnemoStore.from_home(home, graph_embedder="none") as store,
        open_graph(store.settings.database_path, scope=namespace_scope(NAMESPACE)) as view,
    ):
        store.setup()
        from langgraph.store.base import PutOp

        store.batch([PutOp(NAMESPACE, f"seed-{i}", {"text": next(texts)}) for i in range(1000)])
        memory_ids = [view.remember(next(texts)).id for _ in range(50)]
        keys = [f"seed-{i}" for i in range(50)]
        queries = [
            f"who {v} {o}"
            for v, o in itertools.product(["prefers", "booked", "asked about"], ["tea", "trip", "desk", "class"])
        ]
        rows = [_row("LangGraph store.put vs MemoryGraph.remember",
                     *await _pairs(n, lambda i: view.remember(next(texts)), lambda i: store.put(NAMESPACE, f"k{i}", {"text": next(texts)})))]  # fmt: skip
        rows.append(_row("LangGraph store.get vs MemoryGraph.get",
                         *await _pairs(n, lambda i: view.get(memory_ids[i % 50]), lambda i: store.get(NAMESPACE, keys[i % 50]))))  # fmt: skip
        rows.append(_row("LangGraph store.search(query) vs MemoryGraph.recall",
                         *await _pairs(n, lambda i: view.recall(queries[i % len(queries)], limit=20),
                                       lambda i: store.search(NAMESPACE, query=queries[i % len(queries)], limit=10))))  # fmt: skip
        return rows


async def _agents_rows(home: Path, n: int) -> list[list[str]]:
    from agents.tool_context import ToolContext

    from mnemo.integrations.openai_agents import MnemoSession, memory_tools

    session = MnemoSession("sdk", home, user_id="alice")
    archive = open_archive(session.settings.database_path, scope=session.settings.scope)
    archive.start_session("direct", source="bench")
    await session.add_items([{"role": "user", "content": "hello"}])
    message = {"role": "user", "content": "I booked the Lisbon trip for May"}
    try:
        rows = [_row("Agents SDK session.add_items vs Archive.append_many",
                     *await _pairs(n, lambda i: archive.append_many("direct", [message]), lambda i: session.add_items([message])))]  # fmt: skip
        rows.append(_row("Agents SDK session.get_items(20) vs Archive.messages",
                         *await _pairs(n, lambda i: archive.messages("direct", limit=20, newest_first=True),
                                       lambda i: session.get_items(20))))  # fmt: skip
        with AgentMemory.open("tools", home, user_id="alice", graph_embedder="none", archive_embedder="none") as memory:
            recall = memory_tools(memory, ["recall"])[0]
            context = ToolContext(context=None, tool_name="recall", tool_call_id="c", tool_arguments="{}")
            arguments = '{"query": "Lisbon trip"}'
            rows.append(_row("Agents SDK memory_tools recall vs handle_tool_call",
                             *await _pairs(n, lambda i: memory.handle_tool_call("recall", arguments),
                                           lambda i: recall.on_invoke_tool(context, arguments))))  # fmt: skip
    finally:
        archive.close()
        session.close()
    return rows


async def _pydantic_rows(home: Path, n: int) -> list[list[str]]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from mnemo.integrations.pydantic_ai import MnemoContext, memory_toolset

    def call_recall(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("recall", {"query": "Lisbon trip"})])

    with AgentMemory.open("pydantic", home, user_id="alice", graph_embedder="none", archive_embedder="none") as memory:
        memory.remember("Alice booked the Lisbon trip for May")
        with_toolset = Agent(FunctionModel(call_recall), toolsets=[memory_toolset(memory)])
        plain = Agent(FunctionModel(call_recall))

        @plain.tool_plain
        def recall(query: str) -> list:
            return [m.content for m in memory.recall(query)]

        rows = [_row("Pydantic AI toolset recall (agent run) vs a plain tool",
                     *await _pairs(n, lambda i: plain.run("trip?"), lambda i: with_toolset.run("trip?")))]  # fmt: skip
        answer = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")]))
        with_context = Agent(answer, capabilities=[MnemoContext(memory)])
        bare = Agent(answer)

        async def direct(i: int) -> None:
            await bare.run("where am I going in May?")
            memory.prepare_messages("where am I going in May?", [])
            memory.turn_complete("where am I going in May?", "ok")

        rows.append(_row("Pydantic AI MnemoContext (agent run) vs prepare_messages + turn_complete",
                         *await _pairs(n, direct, lambda i: with_context.run("where am I going in May?"))))  # fmt: skip
    return rows


async def overhead(workdir: Path, n: int) -> None:
    rows: list[list[str]] = []
    for name, section in (("langgraph", _langgraph_rows), ("agents", _agents_rows), ("pydantic_ai", _pydantic_rows)):
        try:
            __import__(name)
        except ImportError:
            print(f"(skipped: {name} is not installed)")
            continue
        rows += await section(workdir / f"overhead-{name}", n)
    print_table(f"Adapter overhead over the direct mnemo call, ms ({n} interleaved pairs per row, graph embedder off)",
                ["operation", "direct p50", "direct p95", "adapter p50", "adapter p95", "overhead p50 (paired)",
                 "overhead p95 (adapter - direct)"], rows)  # fmt: skip


# -- 2 and 3: LangGraph's own SQLite store beside MnemoStore ----------------------------------------------


class _SharedVectors:
    """MiniLM for both stores, with the items' vectors computed once beforehand (:meth:`warm`): loading then
    times the stores, not the model twice. Queries are embedded afresh on every search, by each store."""

    def __init__(self) -> None:
        from mnemo.embeddings import MiniLMEmbedder

        self.model = MiniLMEmbedder()
        self.name, self.dim = self.model.name, self.model.dim
        self.known: dict[str, np.ndarray] = {}

    def warm(self, texts: list[str]) -> float:
        started = time.perf_counter()
        fresh = list(dict.fromkeys(t for t in texts if t not in self.known))
        for start in range(0, len(fresh), BATCH):
            chunk = fresh[start : start + BATCH]
            self.known.update(zip(chunk, self.model.embed(chunk)))
        return time.perf_counter() - started

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.known]
        computed = dict(zip(missing, self.model.embed(missing))) if missing else {}
        rows = [self.known[t] if t in self.known else computed[t] for t in texts]
        return np.ascontiguousarray(np.stack(rows), dtype=np.float32) if rows else np.zeros((0, self.dim), np.float32)

    def as_list(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(list(texts)).tolist()


def _reference_store(path: Path, vectors: _SharedVectors):
    """LangGraph's SqliteStore on a connection that can load sqlite-vec, indexing ``text`` with MiniLM."""
    import pysqlite3.dbapi2 as vec_sqlite
    from langgraph.store.sqlite import SqliteStore

    conn = vec_sqlite.connect(str(path), check_same_thread=False, isolation_level=None)
    # Its SQLite store reads "text_fields" (its docstring says "fields"; without it, the whole JSON value is embedded).
    index = {"dims": vectors.dim, "embed": vectors.as_list, "fields": ["text"], "text_fields": ["text"]}
    store = SqliteStore(conn, index=index)
    store.setup()
    return store, conn


def _load(store: Any, items: list[tuple[tuple[str, ...], str, dict]]) -> float:
    from langgraph.store.base import PutOp

    started = time.perf_counter()
    for start in range(0, len(items), BATCH):
        store.batch([PutOp(ns, key, value, index=["text"]) for ns, key, value in items[start : start + BATCH]])
    if hasattr(store, "flush"):
        store.flush()  # MnemoStore embeds lazily: make every item findable by meaning before searching
    return time.perf_counter() - started


def _turn_texts(samples: list[dict]) -> list[str]:
    # Without the invisible characters the threat scan refuses (as bench/locomo.py stores them), for both stores.
    return [
        _visible(_turn_text(turn))
        for sample in samples
        for _, turns, _ in _sessions(sample.get("conversation", {}))
        for turn in turns
    ]


def scale(workdir: Path, samples: list[dict], count: int) -> dict[str, Any]:
    from mnemo.integrations.langgraph import MnemoStore

    turns = _turn_texts(samples)
    values = [{"text": f"{NAMES[(i // len(turns)) % len(NAMES)]} said: {turns[i % len(turns)]}"} for i in range(count)]
    items = [(("scale", "user"), f"item-{i}", value) for i, value in enumerate(values)]
    questions = [question for sample in samples for _, _, question, _ in _scored_questions(sample)][:SCALE_QUERIES]
    vectors = _SharedVectors()
    embedding = vectors.warm([value["text"] for value in values])
    print(f"{count:,} item vectors computed once for both stores in {embedding:.0f} s", flush=True)
    reference, conn = _reference_store(workdir / "langgraph-scale.db", vectors)
    results: dict[str, Any] = {}
    with MnemoStore.from_home(workdir / "mnemo-scale", embedder=vectors) as ours:
        ours.setup()
        for name, store in (("LangGraph SqliteStore + sqlite-vec", reference), ("MnemoStore", ours)):
            seconds = _load(store, items)
            store.search(("scale",), query="warm up", limit=10)
            times = []
            for question in questions:
                started = time.perf_counter()
                store.search(("scale", "user"), query=question, limit=10)
                times.append(_ms(time.perf_counter() - started))
            results[name] = {
                "load_items_per_s": count / seconds,
                "p50": statistics.median(times),
                "p95": _p(times, 0.95),
            }
    conn.close()
    print_table(f"LangGraph store search at {count:,} items in one namespace, ms ({len(questions)} LoCoMo questions, limit 10, MiniLM vectors)",
                ["store", "load (items/s, vectors precomputed)", "search p50", "search p95"],
                [[name, f"{r['load_items_per_s']:,.0f}", f"{r['p50']:.2f}", f"{r['p95']:.2f}"] for name, r in results.items()])  # fmt: skip
    return results


def locomo(workdir: Path, samples: list[dict]) -> dict[str, Any]:
    from mnemo.integrations.langgraph import MnemoStore

    vectors = _SharedVectors()
    vectors.warm(_turn_texts(samples))
    reference, conn = _reference_store(workdir / "langgraph-locomo.db", vectors)
    scores = {"FTS5 OR baseline": _Scores(), "LangGraph SqliteStore + sqlite-vec": _Scores(), "MnemoStore": _Scores()}
    with MnemoStore.from_home(workdir / "mnemo-locomo", embedder=vectors) as ours:
        ours.setup()
        stores = {"LangGraph SqliteStore + sqlite-vec": reference, "MnemoStore": ours}
        for number, sample in enumerate(samples):
            namespace = ("locomo", str(sample.get("sample_id", number)))
            turns = [turn for _, session, _ in _sessions(sample.get("conversation", {})) for turn in session]
            items = [
                (namespace, str(t.get("dia_id")), {"text": _visible(_turn_text(t)), "dia_id": str(t.get("dia_id"))})
                for t in turns
            ]
            plain = sqlite3.connect(":memory:")
            plain.execute("CREATE VIRTUAL TABLE turns USING fts5(text, dia_id UNINDEXED, tokenize='porter unicode61')")
            plain.executemany(
                "INSERT INTO turns(text, dia_id) VALUES (?, ?)", [(v["text"], v["dia_id"]) for _, _, v in items]
            )
            for store in stores.values():
                _load(store, items)
            for category, evidence, question, _ in _scored_questions(sample):
                scores["FTS5 OR baseline"].add(category, evidence, *_baseline(plain, question))
                for name, store in stores.items():
                    started = time.perf_counter()
                    found = store.search(namespace, query=question, limit=10)
                    ms = _ms(time.perf_counter() - started)
                    dias = [item.value["dia_id"] for item in found]
                    scores[name].add(category, evidence, dias, list(dict.fromkeys(_session_of(d) for d in dias)), ms)
            plain.close()
    conn.close()
    summaries = {name: s.summary() for name, s in scores.items()}
    keys = ["turn_any@5", "turn_all@5", "turn_any@10", "turn_all@10", "session_all@5", "session_all@10",
            "multihop_turn_all@5", "questions", "query_ms_p50", "query_ms_p95"]  # fmt: skip
    print_table("LoCoMo recall through LangGraph's store interface (search limit 10; sessions among the top-10 turns)",
                ["metric", *summaries], [[k, *(str(summaries[name][k]) for name in summaries)] for k in keys])  # fmt: skip
    return summaries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="LoCoMo-format JSON (sections 2 and 3 are skipped without it)")
    parser.add_argument("--ops", type=int, default=200, help="timed pairs per overhead row (default 200)")
    parser.add_argument("--items", type=int, default=5000, help="items in the scale comparison (default 5,000)")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-locomo", action="store_true")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-integrations-") as tmp:
        workdir = Path(tmp)
        if not args.skip_overhead:
            asyncio.run(overhead(workdir, args.ops))
        if args.data is None:
            print("(scale and LoCoMo sections skipped: give --data)")
        else:
            samples = json.loads(args.data.read_text(encoding="utf-8"))
            if not args.skip_scale:
                report["scale"] = scale(workdir, samples, args.items)
            if not args.skip_locomo:
                report["locomo"] = locomo(workdir, samples)
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
