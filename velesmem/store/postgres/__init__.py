"""The PostgreSQL + pgvector backend (``VELESDB_MEMORY_BACKEND=postgres``): many daemons, one
database. ``backend.open_postgres`` opens it; docs/team.md says how to run it."""
