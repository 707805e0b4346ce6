"""Hangar's SQLite store (runs, eval results). Each module owns its own tables."""
