"""The storage backends: each implements the storage protocols the domains declare.

:mod:`mnemo.backends.sqlite` keeps the archive and the graph in mnemo's own SQLite database (the default);
:mod:`mnemo.backends.postgres` keeps all three tiers in a PostgreSQL database several hosts share. A backend
imports the domains it serves, never the doors above them; :mod:`mnemo.storage` chooses one.
"""
