"""How fast a new process reaches its first answer: imports, ``mnemo --version``, the first recall and the
archive's first search, each in real new processes, with warm latency and the old path beside them.

Each level builds a home (``--levels``, default 10k and 100k memories in one scope plus a tenth as many in
another scope, and as many archived messages) with ``bench/graph_scale.py``'s synthetic memories and real
MiniLM vectors, and ``bench/archive.py``'s conversations. Then, ``--runs`` times each, a new Python process:

* ``python -c "import mnemo"`` and ``mnemo --version`` (whole-process wall time; ``python -c pass`` is the
  floor);
* opens the graph and recalls once (query embedded; the model loaded by that recall, from the run's
  weights cache as every process after the first on a machine does, or with an empty cache of its own as
  the first after an install; already loaded before it; or preloading from the open with the question a
  second later), then recalls ``--queries`` more times (the warm p50 / p95 beside it). Vectors come from the
  vector file beside the database; the same-run baseline reads them from SQLite as before (a graph on a
  borrowed connection keeps no file), and one row deletes the file first so the recall rebuilds it;
* ``mnemo graph recall`` and ``mnemo sessions search`` as whole processes (wall time, JSON output);
* opens the archive and searches once, then ``--queries`` more times.

Numbers are medians over the runs (max in brackets). The machine is shared and noisy: compare rows of the
same run, not runs.

Usage: ``python bench/cold_start.py [--levels 10000,100000] [--runs 5] [--queries 40] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _tables import print_table
from archive import Synth
from graph_scale import _OTHER, _REAL_TEXTS, _SCOPE, _Corpus, _grow, _TableEmbedder
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.config import load_settings
from mnemo.embeddings import MiniLMEmbedder
from mnemo.embeddings.vector_file import vector_files
from mnemo.storage import open_graph

# A new process: imports, opens the store (after ``prepare``), answers once, then ``--queries`` more times.
_CHILD = """
import json, sys, time
start = time.perf_counter()
{imports}
imported = time.perf_counter()
queries = json.loads(sys.argv[-1])
{prepare}
opened_at = time.perf_counter()
{open}
opened = time.perf_counter()
ask(queries[0])
first = time.perf_counter()
warm = []
for query in queries[1:]:
    began = time.perf_counter()
    ask(query)
    warm.append((time.perf_counter() - began) * 1000)
print(json.dumps({{"import": (imported - start) * 1000, "open": (opened - opened_at) * 1000,
                  "first": (first - opened) * 1000, "warm": warm}}))
"""
# argv: database, "file" or "sqlite" (a borrowed connection keeps no vector file), "loaded", "cold" or
# "preloaded" model.
_CHILD_GRAPH = _CHILD.format(
    imports="from mnemo import _db\nfrom mnemo.embeddings import MiniLMEmbedder\nfrom mnemo.graph import Scope\nfrom mnemo.storage import open_graph",
    prepare="embedder = MiniLMEmbedder()\nif sys.argv[3] == 'loaded':\n    embedder.embed(['load the model first'])",
    # "preloaded": the model starts loading when the graph opens (as an agent session's providers do) and
    # the first question comes a second later (a host building its prompt, a user typing).
    open="graph = open_graph(sys.argv[1] if sys.argv[2] == 'file' else _db.connect(sys.argv[1]),"
    " scope=Scope(user_id='alice'), embedder=embedder)\nif sys.argv[3] == 'preloaded':\n    embedder.preload()\n"
    "    time.sleep(1.0)\nask = lambda query: graph.recall(query, limit=10)",
)
_CHILD_ARCHIVE = _CHILD.format(
    imports="from mnemo.backends.sqlite.archive import SessionArchive",
    prepare="",
    open="archive = SessionArchive(sys.argv[1])\nask = lambda query: archive.search(query, limit=10)",
)


def _wall(command: list[str], runs: int, env: dict[str, str] | None = None) -> list[float]:
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def _child(code: str, args: list[str], runs: int, *, fresh_cache: Path | None = None) -> list[dict]:
    """``runs`` new processes; with ``fresh_cache``, each with an empty weights cache of its own under it."""
    out = []
    for _ in range(runs):
        env = None if fresh_cache is None else {**os.environ, "MNEMO_CACHE_DIR": tempfile.mkdtemp(dir=fresh_cache)}
        done = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True, env=env)
        out.append(json.loads(done.stdout.splitlines()[-1]))
    return out


def _median(samples: list[float]) -> str:
    return f"{statistics.median(samples):,.0f} ({max(samples):,.0f})"


def _warm(results: list[dict]) -> str:
    ordered = sorted(s for r in results for s in r["warm"])
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered):.1f} / {p95:.1f}"


def _build(home: Path, level: int, corpus: _Corpus, table: _TableEmbedder, synth: Synth) -> Path:
    db = load_settings(home).database_path
    with open_graph(db, scope=_SCOPE, embedder=table) as graph:
        size = 0
        while size < level:  # in steps, so the memories' edges and sessions look as graph_scale's do
            step = min(10_000, level - size)
            _grow(graph, corpus, table, step)
            size += step
        _grow(graph.with_scope(_OTHER), corpus, table, level // 10)
    with SessionArchive(db) as archive:
        for _ in range(level // 50):
            archive.append_many(archive.start_session(source="cli"), synth.session(50))
    return db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="10000,100000", help="memories per level, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="new processes per measurement")
    parser.add_argument("--queries", type=int, default=40, help="warm recalls per process after the first")
    parser.add_argument("--keep", type=Path, help="directory to keep the homes in (default: a temp dir)")
    args = parser.parse_args()
    levels = [int(v) for v in args.levels.split(",")]
    # An installed package runs from compiled bytecode. A process told not to write any (some sandboxes and
    # CI images set this) compiles every module from source on every start, ~150 ms of mnemo's imports,
    # which is the compiler being measured, not mnemo; the first child writes the bytecode for the rest.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)

    mnemo = str(Path(sys.executable).with_name("mnemo"))
    floor = _wall([sys.executable, "-c", "pass"], args.runs * 2)
    imports = _wall([sys.executable, "-c", "import mnemo"], args.runs * 2)
    version = _wall([mnemo, "--version"], args.runs * 2)
    print_table(
        "whole new process (ms, median (max))",
        ["command", "wall"],
        [["python -c pass (floor)", _median(floor)], ['python -c "import mnemo"', _median(imports)],
         ["mnemo --version", _median(version)]],
    )  # fmt: skip

    workdir = tempfile.TemporaryDirectory() if args.keep is None else None
    root = Path(workdir.name) if workdir else args.keep
    # Every process of the run shares one weights cache, written by this one's first embedding below.
    os.environ["MNEMO_CACHE_DIR"] = str(root / "cache")
    corpus = _Corpus()
    model = MiniLMEmbedder()
    table = _TableEmbedder(model)
    corpus.base_vectors = model.embed([text for text, _, _ in corpus.memories(_REAL_TEXTS)])
    questions = corpus.questions(args.queries + 1)
    synth = Synth()
    searches = synth.queries(args.queries + 1)

    rows: list[list[object]] = []
    for level in levels:
        home = root / f"home-{level}"
        db = load_settings(home).database_path
        if not db.exists():
            _build(home, level, corpus, table, synth)
        print(f"level {level:,}: {db.stat().st_size / 2**20:,.0f} MiB database", flush=True)
        graph_args = [str(db), "file", "loaded", json.dumps(questions)]
        for path in vector_files(db):
            path.unlink()
        rebuilt = _child(_CHILD_GRAPH, graph_args, 1)  # the first process after an upgrade writes the file
        mapped = _child(_CHILD_GRAPH, graph_args, args.runs)
        cold_model = _child(_CHILD_GRAPH, [str(db), "file", "cold", json.dumps(questions)], args.runs)
        uncached = _child(_CHILD_GRAPH, [str(db), "file", "cold", json.dumps(questions)], args.runs, fresh_cache=root)
        preloaded = _child(_CHILD_GRAPH, [str(db), "file", "preloaded", json.dumps(questions)], args.runs)
        sqlite = _child(_CHILD_GRAPH, [str(db), "sqlite", "loaded", json.dumps(questions)], args.runs)
        sqlite_cold = _child(_CHILD_GRAPH, [str(db), "sqlite", "cold", json.dumps(questions)], args.runs)
        archive = _child(_CHILD_ARCHIVE, [str(db), json.dumps(searches)], args.runs)
        cli_recall = _wall([mnemo, "--home", str(home), "--json", "graph", "recall", questions[0], "--user", "alice"], args.runs)
        cli_search = _wall([mnemo, "--home", str(home), "--json", "sessions", "search", searches[0]], args.runs)
        tag = f"{level:,}"
        first = [[r["first"] for r in results] for results in (rebuilt, mapped, cold_model, sqlite, sqlite_cold, archive)]
        rows += [
            [tag, "graph: first recall, vector file, model already loaded", _median(first[1]), _warm(mapped)],
            [tag, "graph: first recall, vector file, model loaded by it", _median(first[2]), _warm(cold_model)],
            [tag, "graph: the same, no weights cache yet (writes it)",
             _median([r["first"] for r in uncached]), _warm(uncached)],
            [tag, "graph: first recall 1 s after open, model preloaded at open",
             _median([r["first"] for r in preloaded]), _warm(preloaded)],
            [tag, "graph: first recall, file missing (rebuilt by it)", _median(first[0]), _warm(rebuilt)],
            [tag, "baseline: first recall, vectors from SQLite, model loaded", _median(first[3]), _warm(sqlite)],
            [tag, "baseline: first recall, vectors from SQLite, model by it", _median(first[4]), _warm(sqlite_cold)],
            [tag, "archive: first search (full text)", _median(first[5]), _warm(archive)],
            [tag, "process: mnemo graph recall --json (wall)", _median(cli_recall), ""],
            [tag, "process: mnemo sessions search --json (wall)", _median(cli_search), ""],
            [tag, "graph import + open, in the recall process", _median([r["import"] + r["open"] for r in mapped]), ""],
        ]
        print_table(
            f"new process at {tag} memories (ms; first: median (max) of {args.runs} processes; warm: p50 / p95)",
            ["memories", "what", "first", "warm p50 / p95"], rows[-11:],
        )  # fmt: skip
    print_table("all levels", ["memories", "what", "first", "warm p50 / p95"], rows)
    print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if workdir:
        workdir.cleanup()


if __name__ == "__main__":
    main()
