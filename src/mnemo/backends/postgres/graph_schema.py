"""The memory graph's tables in PostgreSQL (component ``graph``, versioned like SQLite's).

The same tables and columns as :mod:`mnemo.graph.schema`, so the graph's SQL runs on both engines; what
differs: full text is a stored ``tsvector`` column of ``graph_memories`` (weight A, mnemo's configuration)
with a GIN index; vectors are a pgvector column, with the memory's scope beside it so a search filters
without a join, and an HNSW index per embedding model made on first use (see :mod:`mnemo.backends.postgres.graph`);
the per-scope tallies are kept by a trigger function. ``seq`` comes from identity columns: numbers are
handed out when a row is inserted, and writers of one scope run one at a time (an advisory lock per
scope), so within a scope a larger ``seq`` is always committed later.
"""

from __future__ import annotations

from .connection import SCHEMA, Executor
from .text_search import CONFIG, ensure_configuration
from .vectors import rebuild_hnsw

COMPONENT = "graph"

# Keeps graph_tallies in step with graph_memories. Its tables are named with their schema, so fix-ups run
# from psql without mnemo's search path keep working; it keeps one plan per statement (mnemo's connections
# plan every statement for its values, which for a trigger would mean planning per row); and a tally that
# reaches zero is removed by its key, not by a scan of every scope's tallies.
_TALLY = f"""
CREATE OR REPLACE FUNCTION graph_tally() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE {SCHEMA}.graph_tallies SET memories = memories - 1
            WHERE user_id = OLD.user_id AND agent_id = OLD.agent_id AND channel_id = OLD.channel_id
            AND ((field = 'source' AND value = OLD.source) OR (field = 'subject' AND value = OLD.subject));
        DELETE FROM {SCHEMA}.graph_tallies
            WHERE user_id = OLD.user_id AND agent_id = OLD.agent_id AND channel_id = OLD.channel_id
            AND ((field = 'source' AND value = OLD.source) OR (field = 'subject' AND value = OLD.subject))
            AND memories <= 0;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO {SCHEMA}.graph_tallies AS t (user_id, agent_id, channel_id, field, value, memories)
            SELECT NEW.user_id, NEW.agent_id, NEW.channel_id, 'source', NEW.source, 1 WHERE NEW.source <> ''
            ON CONFLICT (user_id, agent_id, channel_id, field, value) DO UPDATE SET memories = t.memories + 1;
        INSERT INTO {SCHEMA}.graph_tallies AS t (user_id, agent_id, channel_id, field, value, memories)
            SELECT NEW.user_id, NEW.agent_id, NEW.channel_id, 'subject', NEW.subject, 1 WHERE NEW.subject <> ''
            ON CONFLICT (user_id, agent_id, channel_id, field, value) DO UPDATE SET memories = t.memories + 1;
    END IF;
    RETURN NULL;
END $$;
"""

_TABLES = f"""
CREATE TABLE graph_memories (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    type TEXT NOT NULL,
    importance DOUBLE PRECISION NOT NULL CHECK (importance >= 0 AND importance <= 1),
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    last_accessed_at DOUBLE PRECISION,
    access_count INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT '',
    subject TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    channel_id TEXT NOT NULL DEFAULT '',
    forgotten INTEGER NOT NULL DEFAULT 0,
    pinned INTEGER NOT NULL DEFAULT 0,
    base_importance DOUBLE PRECISION,
    decayed_at DOUBLE PRECISION,
    search TSVECTOR GENERATED ALWAYS AS (setweight(to_tsvector('{CONFIG}', content), 'A')) STORED
);
CREATE INDEX graph_memories_scope ON graph_memories (user_id, agent_id, channel_id, created_at);
CREATE INDEX graph_memories_scope_seq ON graph_memories (user_id, agent_id, channel_id, seq);
CREATE INDEX graph_memories_source ON graph_memories (source);
CREATE INDEX graph_memories_rank ON graph_memories (user_id, agent_id, channel_id, type, importance DESC, created_at DESC);
CREATE INDEX graph_memories_recent ON graph_memories (user_id, agent_id, channel_id, type, created_at DESC);
CREATE INDEX graph_memories_pinned ON graph_memories (user_id, agent_id, channel_id) WHERE pinned = 1;
CREATE INDEX graph_memories_search ON graph_memories USING gin (search);

CREATE TABLE graph_associations (
    source_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    target_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    relation TEXT NOT NULL,
    weight DOUBLE PRECISION NOT NULL CHECK (weight >= 0 AND weight <= 1),
    created_at DOUBLE PRECISION NOT NULL,
    origin TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source_id, target_id, relation)
);
CREATE INDEX graph_associations_target ON graph_associations (target_id, relation);

CREATE TABLE graph_vectors (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory_id TEXT NOT NULL UNIQUE REFERENCES graph_memories (id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector vector NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL
);
CREATE INDEX graph_vectors_scope ON graph_vectors (user_id, agent_id, channel_id, model, dim);

CREATE TABLE graph_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE graph_tallies (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    field TEXT NOT NULL CHECK (field IN ('source', 'subject')),
    value TEXT NOT NULL,
    memories INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id, channel_id, field, value)
);

{_TALLY}
CREATE TRIGGER graph_tallies_insert AFTER INSERT OR DELETE ON graph_memories
    FOR EACH ROW EXECUTE FUNCTION graph_tally();
CREATE TRIGGER graph_tallies_update AFTER UPDATE OF source, subject, user_id, agent_id, channel_id ON graph_memories
    FOR EACH ROW EXECUTE FUNCTION graph_tally();

CREATE TABLE graph_maintenance (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    last_pass_at DOUBLE PRECISION,
    pass_at DOUBLE PRECISION,
    decay_cursor BIGINT NOT NULL DEFAULT 0,
    link_cursor BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires DOUBLE PRECISION,
    PRIMARY KEY (user_id, agent_id, channel_id)
);

CREATE TABLE graph_maintenance_log (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at DOUBLE PRECISION NOT NULL,
    memory_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    action TEXT NOT NULL,
    other_id TEXT,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX graph_maintenance_log_memory ON graph_maintenance_log (memory_id);

CREATE TABLE graph_extracted (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    message_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    message_id BIGINT,
    memories INTEGER NOT NULL,
    extracted_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (user_id, agent_id, channel_id, message_key)
);
CREATE TABLE graph_memory_messages (
    memory_id TEXT NOT NULL REFERENCES graph_memories (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    message_id BIGINT
);
CREATE UNIQUE INDEX graph_memory_messages_key ON graph_memory_messages (memory_id, session_id, COALESCE(message_id, -1));
CREATE INDEX graph_memory_messages_message ON graph_memory_messages (message_id);
"""


def _v1(executor: Executor) -> None:
    executor.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    ensure_configuration(executor)
    executor.execute(_TABLES)


def _v2(executor: Executor) -> None:
    rebuild_hnsw(executor, "graph_vectors", "vector")


# Provenance and the review queue, as in SQLite (see :data:`mnemo.graph.schema.PROVENANCE`); safe to run again.
_PROVENANCE = """
ALTER TABLE graph_memories ADD COLUMN IF NOT EXISTS origin TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE graph_memories ADD COLUMN IF NOT EXISTS origin_detail TEXT NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS graph_review (
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
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION,
    state TEXT NOT NULL DEFAULT 'pending',
    decided_at DOUBLE PRECISION,
    outcome TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS graph_review_scope ON graph_review (user_id, agent_id, channel_id, state, created_at);
"""

MIGRATIONS = [_v1, _v2, _TALLY, _PROVENANCE]
