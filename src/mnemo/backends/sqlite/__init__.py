"""mnemo's own SQLite database (WAL, FTS5, vector files beside it): the default home of the session archive
(:mod:`.archive`) and the memory graph (:mod:`.graph`). The curated pair needs no database: its
``MEMORY.md`` / ``USER.md`` files are the curated domain's own format (:mod:`mnemo.curated.storage`).
"""
