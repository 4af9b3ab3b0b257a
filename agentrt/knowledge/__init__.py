"""Agentic retrieval over knowledge bases ("contexts").

    documents   source files → chunks that follow their structure (headings, pages)
    graph       entities and relations read out of the chunks, without a model
    store       SQLite (items, chunks, FTS5, the graph, vectors) and a FAISS index per context
    ingest      the store brought up to date with the sources, incrementally
    search      keyword, semantic and hybrid search; the graph around a query
    pages       the session tools a search offers for the items it found
    vfs         a run's virtual files and the shell-like commands over them
    answer      the chunks a run found and the answer that cites them

The tools a model calls are a workspace's tool pack (`workspaces/knowledge/tools/`), built on
these modules; what a workspace declares in `contexts.yaml` is `agentrt.contexts`, which the
core reads without this package. Nothing is imported here: most of it needs the `retrieval`
extra.
"""
