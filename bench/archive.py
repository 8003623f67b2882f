"""Session archive benchmark: ingest rate, search latency at scale, and LoCoMo retrieval quality.

    python bench/archive.py                      # 10k and 100k messages
    python bench/archive.py --sizes 10000 100000 1000000
    python bench/archive.py --locomo ../shared/data/locomo/locomo_dev.json
    python bench/archive.py --database-url embedded [--locomo FILE]   # PostgreSQL beside SQLite

Scale: deterministic synthetic conversations (a seeded generator over a Zipf-distributed vocabulary
of technical and everyday words, with tool calls) are ingested through ``append_many`` one session
per batch; then a fixed mix of keyword queries and natural-language questions is timed through
``SessionArchive.search`` (grouped, with neighbouring messages). The baseline measured in the same run
is the naive approach on the same database: a bare FTS5 OR-of-terms ``MATCH ... ORDER BY rank
LIMIT 10`` (no filters, grouping or snippets). Latency is reported as wall-clock and as CPU time of
this process, since a shared machine inflates wall-clock unpredictably.

LoCoMo: every turn is a message (``"speaker: text [shares image: caption]"``, the speaker also as its
``name``, as a multi-party chat would carry it), every LoCoMo session a session; each category 1-4 question
with evidence is asked as typed. The last line printed is one JSON object with the scores. The plain
FTS5 OR-of-terms baseline is computed in the same run.

``--database-url URL`` (or ``embedded``: a PostgreSQL 18 + pgvector started for the run) measures the
PostgreSQL archive beside SQLite in the same run, on the same data and queries; each engine gets a fresh
database. After each level's ingest the PostgreSQL tables are vacuumed and analysed and a checkpoint is
taken (what autovacuum and the checkpointer do by themselves soon after), so the role needs the right to
``CHECKPOINT`` (``pg_checkpoint``; the embedded server's is a superuser).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import _postgres  # noqa: E402
from mnemo.embeddings import EMBEDDER_NAMES, named_embedder  # noqa: E402
from mnemo.retrieval import meaningful_terms, or_query  # noqa: E402
from mnemo.storage import open_archive

# -- synthetic conversations -----------------------------------------------------------------------

_TECH = (
    "docker compose kubernetes staging production server deploy rollback database postgres migration index "
    "query latency cache redis queue worker cron job backup restore nginx certificate tls dns domain api "
    "endpoint token auth login session cookie webhook gateway timeout retry error exception stacktrace log "
    "metrics dashboard alert grafana prometheus terraform ansible bucket storage upload download config yaml "
    "json schema field column table branch merge commit rebase release tag version changelog test fixture "
    "benchmark profile memory leak cpu thread process lock mutex deadlock race condition python rust go "
    "typescript react frontend backend css layout bug ticket sprint review design spec invoice customer"
).split()
_EVERYDAY = (
    "weekend dinner recipe garden birthday vacation flight hotel museum concert guitar painting hiking "
    "running marathon coffee tea bakery bread pasta soup salad dog cat puppy school teacher homework "
    "doctor appointment dentist gym yoga book novel movie series podcast music festival beach mountain "
    "lake river camping tent photo camera family sister brother mother father friend neighbour wedding "
    "adoption agency support group volunteer charity shelter donation church park library museum city"
).split()
_NAMES = "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil".split()
_FILLER = (
    "the a to and of in it is that for on with as was we this you be at have but not are they so "
    "just then when what about can will would should there their been also really think maybe"
).split()
_TEMPLATES = (
    "I think the {t} {t} is failing because of the {t} after we changed the {t}.",
    "Can you check whether {n} already fixed the {t} {t} issue on {t}?",
    "We talked about the {e} with {n} last {e}, and the {e} was great.",
    "The {t} error shows up again when the {t} retries: {t} {t} timeout.",
    "Remember to update the {t} before the {t} release, {n} asked for it.",
    "My {e} and I went to the {e} near the {e}; it reminded me of {n}.",
    "Done: I changed {t}.{t} to use the new {t} and reran the {t} suite.",
    "Let me look at the {t} logs and the {t} {t} first.",
    "{n} said the {e} {e} was on Saturday and we should bring {e}.",
    "The {t} p95 went from {d} ms to {d} ms after the {t} change.",
)


class Synth:
    """Deterministic realistic-looking conversations."""

    def __init__(self, seed: int = 7, topics: int | None = None) -> None:
        """``topics`` seeds which words are the common ones (the vocabulary's order), so that writers made with
        different ``topics`` talk about different things most; by default, the lists' own order."""
        self.rng = random.Random(seed)
        self.tech, self.everyday = list(_TECH), list(_EVERYDAY)
        if topics is not None:
            order = random.Random(topics)
            order.shuffle(self.tech)
            order.shuffle(self.everyday)
        # Zipf-like weights so some words are common and most are rare, as in real text.
        self.tech_w = list(itertools.accumulate(1 / (i + 1) ** 0.9 for i in range(len(_TECH))))
        self.every_w = list(itertools.accumulate(1 / (i + 1) ** 0.9 for i in range(len(_EVERYDAY))))
        self.rare = [f"{w}{i}" for i in range(3000) for w in ("proj", "host", "ticket")]

    def _fill(self, template: str) -> str:
        rng = self.rng

        def word(kind: str) -> str:
            if kind == "t":
                if rng.random() < 0.08:
                    return rng.choice(self.rare)
                return rng.choices(self.tech, cum_weights=self.tech_w)[0]
            if kind == "e":
                return rng.choices(self.everyday, cum_weights=self.every_w)[0]
            if kind == "n":
                return rng.choice(_NAMES)
            return str(rng.randint(5, 900))

        return re.sub(r"\{(\w)\}", lambda m: word(m.group(1)), template)

    def message(self, role: str) -> dict:
        rng = self.rng
        sentences = [self._fill(rng.choice(_TEMPLATES)) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            sentences.append(" ".join(rng.choice(_FILLER) for _ in range(rng.randint(4, 12))) + ".")
        message = {"role": role, "content": " ".join(sentences)}
        if role == "assistant" and rng.random() < 0.1:
            message["tool_calls"] = [{
                "id": f"call_{rng.getrandbits(32):x}", "type": "function",
                "function": {"name": rng.choice(["shell", "read_file", "web_search"]),
                             "arguments": json.dumps({"cmd": self._fill("grep {t} /var/log/{t}.log")})},
            }]
        return message

    def session(self, length: int) -> list[dict]:
        return [self.message("user" if i % 2 == 0 else "assistant") for i in range(length)]

    def queries(self, count: int) -> list[str]:
        rng = random.Random(99)
        out = []
        for i in range(count):
            kind = i % 4
            if kind == 0:
                out.append(rng.choice(_TECH) + " " + rng.choice(_TECH))
            elif kind == 1:
                out.append(rng.choice(self.rare))
            elif kind == 2:
                out.append(f"what did {rng.choice(_NAMES)} say about the {rng.choice(_EVERYDAY)} {rng.choice(_EVERYDAY)}?")
            else:
                out.append(f"{rng.choice(_TECH)} {rng.choice(_TECH)} {rng.choice(_TECH)} error")
        return out


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def _table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for line in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).rjust(w) for x, w in zip(line, widths)))


def _scale_engine(target: str | Path, sizes: list[int], session_length: int, queries: list[str], sqlite_file: Path | None) -> list[list[str]]:
    """One engine's rows: ingest rate and search latency at each size (and the bare FTS5 floor on SQLite)."""
    synth = Synth()
    rows = []
    archive = open_archive(target)
    engine = "sqlite" if sqlite_file is not None else "postgres"
    ingested = 0
    wall = cpu = 0.0
    for size in sorted(sizes):
        while ingested < size:
            batch = synth.session(min(session_length, size - ingested))
            w0, c0 = time.perf_counter(), time.process_time()
            sid = archive.start_session(source="cli")
            archive.append_many(sid, batch)
            wall += time.perf_counter() - w0
            cpu += time.process_time() - c0
            ingested += len(batch)
        if sqlite_file is None:
            # What the server does by itself soon after a bulk load: statistics for the planner (and mnemo's
            # common words), the full-text index's pending entries merged, dirty pages written out. Left to
            # autovacuum and the checkpointer, they land among the timed queries (p95 2-3x, run to run).
            with archive._reading() as conn:
                conn.execute("VACUUM ANALYZE messages")
                conn.execute("VACUUM ANALYZE sessions")
                conn.execute("CHECKPOINT")
        archive.search("warmup query", limit=5)
        ours, ours_cpu, floor = [], [], []
        raw = sqlite3.connect(sqlite_file) if sqlite_file is not None else None
        for query in queries:
            w0, c0 = time.perf_counter(), time.process_time()
            archive.search(query, limit=5)
            ours.append((time.perf_counter() - w0) * 1000)
            ours_cpu.append((time.process_time() - c0) * 1000)
            if raw is not None:
                fts = or_query(meaningful_terms(query))
                w0 = time.perf_counter()
                raw.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT 10", (fts,)).fetchall()
                floor.append((time.perf_counter() - w0) * 1000)
        if raw is not None:
            raw.close()
        rows.append([
            engine, f"{size:,}", f"{ingested / wall:,.0f}", f"{ingested / cpu:,.0f}",
            f"{_percentile(ours, 50):.2f}", f"{_percentile(ours, 95):.2f}", f"{_percentile(ours_cpu, 95):.2f}",
            f"{_percentile(floor, 50):.2f}" if floor else "-", f"{_percentile(floor, 95):.2f}" if floor else "-",
        ])
        print(f"[{engine}: {size:,} messages done]", file=sys.stderr, flush=True)
    archive.close()
    return rows


def bench_scale(sizes: list[int], session_length: int, query_count: int, workdir: Path, database_url: str | None) -> None:
    queries = Synth().queries(query_count)
    rows = _scale_engine(workdir / "scale.db", sizes, session_length, queries, workdir / "scale.db")
    if database_url:
        with _postgres.server(database_url) as server, _postgres.scratch_database(server) as url:
            rows += _scale_engine(url, sizes, session_length, queries, None)
    print(f"\nscale: {query_count} queries per level (keywords, rare ids, questions), search(limit=5) grouped with"
          f" neighbours; sessions of {session_length} messages, one append_many per session")
    print("baseline: bare FTS5 OR-of-terms MATCH ... ORDER BY rank LIMIT 10 on the SQLite database (no filters, no snippets)")
    _table(rows, ["engine", "messages", "ingest msg/s", "ingest msg/s cpu", "search p50 ms", "search p95 ms",
                  "p95 cpu ms", "bare FTS p50", "bare FTS p95"])


# -- LoCoMo ----------------------------------------------------------------------------------------


def _locomo_time(text: str | None) -> float | None:
    if not text:
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def _turn_text(turn: dict) -> str:
    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
    if turn.get("blip_caption"):
        text += f" [shares image: {turn['blip_caption']}]"
    return text


def _sessions(conversation: dict) -> list[tuple[str, list[dict], float | None]]:
    found = []
    for key, turns in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list):
            found.append((int(match.group(1)), key, turns, _locomo_time(conversation.get(f"{key}_date_time"))))
    return [(key, turns, when) for _, key, turns, when in sorted(found)]


def _scored_questions(sample: dict) -> Iterator[tuple[int, list[str], str, dict]]:
    """The questions LoCoMo is scored on (categories 1-4 with evidence): category, evidence, question, raw."""
    for qa in sample.get("qa", []):
        category, evidence = qa.get("category"), _evidence(qa)
        if category in (1, 2, 3, 4) and evidence:
            yield category, evidence, str(qa.get("question", "")), qa


def _baseline(plain: sqlite3.Connection, question: str) -> tuple[list[str], list[str], float]:
    """The data README's baseline: FTS5 OR of the question's meaningful terms, ranked by bm25.
    Returns the top 10 turns, the sessions in rank order, and the query time in ms."""
    expression = or_query(meaningful_terms(question))
    t0 = time.perf_counter()
    rows = plain.execute(
        "SELECT dia_id FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT 200", (expression,)
    ).fetchall() if expression else []  # fmt: skip
    ms = (time.perf_counter() - t0) * 1000
    ranked = [r[0] for r in rows]
    return ranked[:10], list(dict.fromkeys(_session_of(d) for d in ranked)), ms


def _evidence(qa: dict) -> list[str]:
    ids = []
    for item in qa.get("evidence") or []:
        for piece in str(item).split(";"):
            piece = piece.strip()
            if piece:
                ids.append(piece)
    return ids


def _session_of(dia_id: str) -> str:
    return dia_id.split(":")[0]


class _Scores:
    def __init__(self) -> None:
        self.keys = ["turn_any@5", "turn_all@5", "turn_any@10", "turn_all@10", "session_all@5", "session_all@10"]
        self.values: dict[str, list[float]] = {k: [] for k in self.keys + ["multihop_turn_all@5", "multihop_turn_all@10"]}
        self.times: list[float] = []

    def add(self, category: int, evidence: list[str], turns: list[str], sessions: list[str], ms: float) -> None:
        wanted = set(evidence)
        wanted_sessions = {_session_of(e) for e in evidence}
        for k in (5, 10):
            top = set(turns[:k])
            self.values[f"turn_any@{k}"].append(float(bool(wanted & top)))
            self.values[f"turn_all@{k}"].append(float(wanted <= top))
            self.values[f"session_all@{k}"].append(float(wanted_sessions <= set(sessions[:k])))
            if category == 1:
                self.values[f"multihop_turn_all@{k}"].append(float(wanted <= top))
        self.times.append(ms)

    def summary(self) -> dict[str, float]:
        out = {k: round(statistics.fmean(v), 3) if v else 0.0 for k, v in self.values.items()}
        out["questions"] = len(self.times)
        out["query_ms_p50"] = round(_percentile(self.times, 50), 3) if self.times else 0.0
        out["query_ms_p95"] = round(_percentile(self.times, 95), 3) if self.times else 0.0
        return out


def _locomo_engine(samples: list[dict], targets: Iterator[str | Path], embedder: str, baseline: _Scores | None) -> _Scores:
    ours = _Scores()
    for number, (sample, target) in enumerate(zip(samples, targets)):
        conversation = sample.get("conversation", {})
        speaker_a = conversation.get("speaker_a")
        archive = open_archive(target, embedder=named_embedder(embedder))
        plain = sqlite3.connect(":memory:")
        plain.execute("CREATE VIRTUAL TABLE turns USING fts5(text, dia_id UNINDEXED, tokenize='porter unicode61')")
        message_dia: dict[int, str] = {}
        session_label: dict[str, str] = {}
        for key, turns, when in _sessions(conversation):
            label = "D" + key.split("_")[1]
            sid = archive.start_session(f"{sample.get('sample_id', number)}:{key}", started_at=when or 0.0)
            session_label[sid] = label
            messages = [
                {"role": "user" if turn.get("speaker") == speaker_a else "assistant",
                 "content": _turn_text(turn), "name": turn.get("speaker"), "timestamp": (when or 0.0) + i, "dia_id": turn.get("dia_id")}
                for i, turn in enumerate(turns)
            ]
            for mid, turn in zip(archive.append_many(sid, messages), turns):
                message_dia[mid] = turn.get("dia_id")
            if baseline is not None:
                plain.executemany("INSERT INTO turns(text, dia_id) VALUES (?, ?)", [(_turn_text(t), t.get("dia_id")) for t in turns])
        for category, evidence, question, _ in _scored_questions(sample):
            t0 = time.perf_counter()
            hits = archive.search_messages(question, limit=10)
            ms = (time.perf_counter() - t0) * 1000
            turns = [message_dia[h.message.id] for h in hits]
            groups = archive.search(question, limit=10, hits_per_session=1, context=0)
            sessions = [session_label[g.root.id] for g in groups]
            ours.add(category, evidence, turns, sessions, ms)

            if baseline is not None:
                baseline.add(category, evidence, *_baseline(plain, question))
        archive.close()
        plain.close()
    return ours


def _postgres_databases(url: str) -> Iterator[str]:
    """A fresh database per conversation, each dropped when the next one is asked for (or at the end)."""
    with _postgres.server(url) as server:
        while True:
            with _postgres.scratch_database(server) as database:
                yield database


def bench_locomo(path: Path, workdir: Path, embedder: str = "none", database_url: str | None = None) -> dict:
    samples = json.loads(path.read_text(encoding="utf-8"))
    baseline = _Scores()
    engines = {"sqlite": _locomo_engine(samples, (workdir / f"locomo-{n}.db" for n in itertools.count()), embedder, baseline)}
    if database_url:
        databases = _postgres_databases(database_url)
        try:
            engines["postgres"] = _locomo_engine(samples, databases, embedder, None)
        finally:
            databases.close()  # type: ignore[attr-defined]
    summaries = {name: scores.summary() for name, scores in engines.items()}
    base_summary = baseline.summary()
    print(f"\nLoCoMo retrieval on {path.name} ({base_summary['questions']} questions, categories 1-4 with evidence)")
    metrics = baseline.keys + ["multihop_turn_all@5", "multihop_turn_all@10", "query_ms_p50", "query_ms_p95"]
    rows = [[k, f"{base_summary[k]}", *(f"{summary[k]}" for summary in summaries.values())] for k in metrics]
    _table(rows, ["metric", "FTS5 OR baseline (same run)", *(f"mnemo archive ({name})" for name in summaries)])
    keys = ("turn_any@5", "turn_all@5", "turn_any@10", "turn_all@10", "session_all@5", "session_all@10",
            "multihop_turn_all@5", "questions", "query_ms_p50", "query_ms_p95")
    result = {k: summaries["sqlite"][k] for k in keys}
    if "postgres" in summaries:
        result["postgres"] = {k: summaries["postgres"][k] for k in keys}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, help="a LoCoMo-format JSON file: measure retrieval quality only")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="message counts (add 1000000 for the full run)")
    parser.add_argument("--full", action="store_true", help="shorthand for --sizes 10000 100000 1000000")
    parser.add_argument("--session-length", type=int, default=50)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES, default="none",
                        help="the archive's vector channel for --locomo (as the archive_embedder setting)")
    parser.add_argument("--workdir", type=Path, help="where to put the databases (default: a temporary directory)")
    parser.add_argument("--database-url", help="also measure PostgreSQL: a server URL to make scratch databases on, or 'embedded'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        if args.locomo:
            result = bench_locomo(args.locomo, Path(tmp), args.embedder, args.database_url)
            print(json.dumps(result))
            return 0
        sizes = [10_000, 100_000, 1_000_000] if args.full else args.sizes
        bench_scale(sizes, args.session_length, args.queries, Path(tmp), args.database_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
