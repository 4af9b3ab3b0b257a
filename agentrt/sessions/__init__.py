"""Sessions: the store protocol, its SQLite backend, and the history window a run sees."""
