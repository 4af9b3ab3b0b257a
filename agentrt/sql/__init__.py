"""The database copilot's pieces: the database, the SQL guard, schema grounding and the
example selector. Used by workspace tool packs, never by the core."""
