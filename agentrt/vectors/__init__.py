"""Vectors: the sentence-transformers embedder and the on-disk embedding cache."""
