"""Sessions: the store protocol, its SQLite and PostgreSQL backends, and the history window a
run sees."""
