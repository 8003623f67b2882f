"""The memory graph's tables in mnemo's database (all prefixed ``graph_``), migrated forward only.

Memories have an integer ``seq`` as their rowid so the external-content FTS index keeps pointing at the
right rows across ``VACUUM``; it never reuses a number, so "everything up to seq N is embedded" stays
true. Vectors have an ever-increasing ``seq`` too (a re-embedded memory gets a new
one), so an in-memory index can catch up with other processes' embeddings by reading only newer rows. Whether a memory is superseded is never stored: it is derived from the
``updates`` edges, so an edge and the flag it implies cannot disagree.
"""

from __future__ import annotations

import functools
import sqlite3

from .. import _db
from ..provenance import Provenance
from .types import Memory, MemoryType, Scope

COMPONENT = "graph"

_V1 = """
CREATE TABLE graph_memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    type TEXT NOT NULL,
    importance REAL NOT NULL CHECK (importance >= 0 AND importance <= 1),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    last_accessed_at REAL,
    access_count INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    channel_id TEXT NOT NULL DEFAULT '',
    forgotten INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX graph_memories_scope ON graph_memories (user_id, agent_id, channel_id, created_at);
CREATE INDEX graph_memories_source ON graph_memories (source);

CREATE TABLE graph_associations (
    source_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    target_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    relation TEXT NOT NULL,
    weight REAL NOT NULL CHECK (weight >= 0 AND weight <= 1),
    created_at REAL NOT NULL,
    PRIMARY KEY (source_id, target_id, relation)
);
CREATE INDEX graph_associations_target ON graph_associations (target_id, relation);

CREATE VIRTUAL TABLE graph_memories_fts USING fts5 (
    content, content='graph_memories', content_rowid='seq', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER graph_memories_fts_insert AFTER INSERT ON graph_memories BEGIN
    INSERT INTO graph_memories_fts (rowid, content) VALUES (new.seq, new.content);
END;
CREATE TRIGGER graph_memories_fts_delete AFTER DELETE ON graph_memories BEGIN
    INSERT INTO graph_memories_fts (graph_memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
CREATE TRIGGER graph_memories_fts_update AFTER UPDATE OF content ON graph_memories BEGIN
    INSERT INTO graph_memories_fts (graph_memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
    INSERT INTO graph_memories_fts (rowid, content) VALUES (new.seq, new.content);
END;

CREATE TABLE graph_vectors (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL UNIQUE REFERENCES graph_memories (id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL
);

CREATE TABLE graph_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

# Version 2: who a memory is about (``subject``, e.g. the speaker of a chat turn), and a tally of memories per
# source and per subject in each scope, kept by triggers. Recall reads the tally to score a source as one
# document (its size, how many sources there are) and to know which subjects a query can name, without
# scanning the memories.
_COUNT_NEW = """
    INSERT INTO graph_tallies (user_id, agent_id, channel_id, field, value, memories)
        SELECT new.user_id, new.agent_id, new.channel_id, 'source', new.source, 1 WHERE new.source != ''
        ON CONFLICT DO UPDATE SET memories = memories + 1;
    INSERT INTO graph_tallies (user_id, agent_id, channel_id, field, value, memories)
        SELECT new.user_id, new.agent_id, new.channel_id, 'subject', new.subject, 1 WHERE new.subject != ''
        ON CONFLICT DO UPDATE SET memories = memories + 1;"""
_UNCOUNT_OLD = """
    UPDATE graph_tallies SET memories = memories - 1
        WHERE user_id = old.user_id AND agent_id = old.agent_id AND channel_id = old.channel_id
        AND ((field = 'source' AND value = old.source) OR (field = 'subject' AND value = old.subject));
    DELETE FROM graph_tallies WHERE memories <= 0;"""
_V2 = f"""
ALTER TABLE graph_memories ADD COLUMN subject TEXT NOT NULL DEFAULT '';

CREATE TABLE graph_tallies (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    field TEXT NOT NULL CHECK (field IN ('source', 'subject')),
    value TEXT NOT NULL,
    memories INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id, channel_id, field, value)
) WITHOUT ROWID;
INSERT INTO graph_tallies (user_id, agent_id, channel_id, field, value, memories)
    SELECT user_id, agent_id, channel_id, 'source', source, count(*) FROM graph_memories WHERE source != ''
    GROUP BY user_id, agent_id, channel_id, source;

CREATE TRIGGER graph_tallies_insert AFTER INSERT ON graph_memories BEGIN{_COUNT_NEW}
END;
CREATE TRIGGER graph_tallies_delete AFTER DELETE ON graph_memories BEGIN{_UNCOUNT_OLD}
END;
CREATE TRIGGER graph_tallies_update AFTER UPDATE OF source, subject, user_id, agent_id, channel_id
ON graph_memories BEGIN{_UNCOUNT_OLD}{_COUNT_NEW}
END;
"""

# Maintenance (see :mod:`mnemo.graph.maintenance`): ``pinned`` memories never decay or prune; decay lowers
# ``importance`` only, so ``base_importance`` keeps the weight a memory was written with (NULL: never decayed,
# ``importance`` is the base) and ``decayed_at`` the time decay was last applied up to. One row per scope in
# ``graph_maintenance`` holds the pass in progress (its time and cursors, so a killed pass resumes) and the
# lease that lets one process run it while the others skip; ``graph_maintenance_log`` is what passes did, so
# a pruned or merged memory can be explained and undone. An edge's ``origin`` is ``'maintenance'`` for the
# similarity links a pass adds, which recall does not follow (see :mod:`mnemo.graph.recall`). The rank and recent indexes serve the bulletin's per-type tops.
_V3 = """
ALTER TABLE graph_memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE graph_memories ADD COLUMN base_importance REAL;
ALTER TABLE graph_memories ADD COLUMN decayed_at REAL;
ALTER TABLE graph_associations ADD COLUMN origin TEXT NOT NULL DEFAULT '';
CREATE INDEX graph_memories_rank ON graph_memories (user_id, agent_id, channel_id, type, importance DESC, created_at DESC);
CREATE INDEX graph_memories_recent ON graph_memories (user_id, agent_id, channel_id, type, created_at DESC);
CREATE INDEX graph_memories_pinned ON graph_memories (user_id, agent_id, channel_id) WHERE pinned = 1;

CREATE TABLE graph_maintenance (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    last_pass_at REAL,
    pass_at REAL,
    decay_cursor INTEGER NOT NULL DEFAULT 0,
    link_cursor INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires REAL,
    PRIMARY KEY (user_id, agent_id, channel_id)
) WITHOUT ROWID;

CREATE TABLE graph_maintenance_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    memory_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    action TEXT NOT NULL,
    other_id TEXT,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX graph_maintenance_log_memory ON graph_maintenance_log (memory_id);
"""

# Extraction: which messages were already turned into memories (``graph_extracted``, one row per message
# and scope, so extracting it again adds nothing) and which archived message(s) each extracted memory came
# from (``graph_memory_messages``). A message the archive did not hold is keyed by a hash of its session,
# role and text, and linked by session alone.
_EXTRACTION = """
CREATE TABLE graph_extracted (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    message_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    message_id INTEGER,
    memories INTEGER NOT NULL,
    extracted_at REAL NOT NULL,
    PRIMARY KEY (user_id, agent_id, channel_id, message_key)
) WITHOUT ROWID;
CREATE TABLE graph_memory_messages (
    memory_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    message_id INTEGER
);
CREATE UNIQUE INDEX graph_memory_messages_key ON graph_memory_messages (memory_id, session_id, COALESCE(message_id, -1));
CREATE INDEX graph_memory_messages_message ON graph_memory_messages (message_id);
"""

# Provenance (see :mod:`mnemo.provenance`): each memory's ``origin`` and the JSON ``origin_detail`` of how it was
# written; memories from before are ``'unknown'``. ``graph_review`` is the review queue (see
# :mod:`mnemo.review`): writes kept out of every prompt until the user approves them, each with its payload,
# the digest an approval binds, where it came from, what the scan found and when it expires.
PROVENANCE = """
ALTER TABLE graph_memories ADD COLUMN origin TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE graph_memories ADD COLUMN origin_detail TEXT NOT NULL DEFAULT '';
CREATE TABLE graph_review (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    digest TEXT NOT NULL,
    origin TEXT NOT NULL,
    origin_detail TEXT NOT NULL DEFAULT '',
    findings TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    expires_at REAL,
    state TEXT NOT NULL DEFAULT 'pending',
    decided_at REAL,
    outcome TEXT NOT NULL DEFAULT ''
);
CREATE INDEX graph_review_scope ON graph_review (user_id, agent_id, channel_id, state, created_at);
"""

MIGRATIONS: tuple[_db.Migration, ...] = (_V1, _V2, _V3, _EXTRACTION, PROVENANCE)


def ensure_schema(conn: sqlite3.Connection) -> int:
    """Create or upgrade the graph's tables; returns the schema version in force."""
    return _db.migrate(conn, COMPONENT, MIGRATIONS)


_COLUMNS = (
    "m.id, m.content, m.type, m.importance, m.created_at, m.updated_at, m.last_accessed_at,"
    " m.access_count, m.source, m.subject, m.user_id, m.agent_id, m.channel_id, m.forgotten, m.pinned,"
    " m.base_importance, m.decayed_at, m.origin, m.origin_detail"
)
# Newest superseding version first, so a branch in the chain resolves to the latest write.
_SUPERSEDED_BY = (
    "(SELECT a.source_id FROM graph_associations a JOIN graph_memories s ON s.id = a.source_id"
    " WHERE a.target_id = m.id AND a.relation = 'updates'"
    " ORDER BY s.created_at DESC, s.seq DESC LIMIT 1) AS superseded_by"
)
SELECT_MEMORY = f"SELECT {_COLUMNS}, {_SUPERSEDED_BY}, m.seq FROM graph_memories m"
SCOPE_CLAUSE = "m.user_id = ? AND m.agent_id = ? AND m.channel_id = ?"


def scope_params(scope: Scope) -> tuple[str, str, str]:
    """The bind values for :data:`SCOPE_CLAUSE`."""
    return (scope.user_id, scope.agent_id, scope.channel_id)


def meta_key(name: str, scope: Scope) -> str:
    """The ``graph_meta`` key under which ``scope`` keeps its ``name`` (a marker, a cached value)."""
    return f"{name}\x1f" + "\x1f".join(scope_params(scope))


# By value, without the Enum call's own work: a recall converts a few hundred rows.
_MEMORY_TYPES = {kind.value: kind for kind in MemoryType}


@functools.lru_cache(maxsize=256)
def _stored_scope(user_id: str, agent_id: str, channel_id: str) -> Scope:
    # A recall turns a few hundred rows of one scope into memories: its ids are checked once, not per row.
    return Scope(user_id, agent_id, channel_id)


def row_to_memory(row: sqlite3.Row) -> Memory:
    """A row selected with :data:`SELECT_MEMORY` as a :class:`Memory`."""
    # By position, in SELECT_MEMORY's order: a recall converts a few hundred rows, and reading a PostgreSQL
    # row by name is a Python call per column.
    (
        memory_id, content, kind, importance, created_at, updated_at, last_accessed_at, access_count, source,
        subject, user_id, agent_id, channel_id, forgotten, pinned, base_importance, decayed_at, origin, detail,
        superseded_by,
    ) = tuple(row)[:20]  # fmt: skip
    return Memory(
        id=memory_id,
        content=content,
        type=_MEMORY_TYPES.get(kind) or MemoryType(kind),  # an unknown kind still raises the Enum's ValueError
        importance=importance,
        created_at=created_at,
        updated_at=updated_at,
        last_accessed_at=last_accessed_at,
        access_count=access_count,
        source=source,
        subject=subject,
        scope=_stored_scope(user_id, agent_id, channel_id),
        forgotten=bool(forgotten),
        superseded_by=superseded_by,
        pinned=bool(pinned),
        base_importance=base_importance,
        decayed_at=decayed_at,
        provenance=_provenance(origin, detail),
    )


@functools.lru_cache(maxsize=1024)
def _provenance(origin: str, detail: str) -> Provenance:
    return Provenance.stored(origin, detail)
