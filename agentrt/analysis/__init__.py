"""Data analysis for workspace tool packs: data frames kept by name, and chart tools. Used by
workspace tool packs, never by the core."""
