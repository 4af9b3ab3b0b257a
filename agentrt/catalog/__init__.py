"""The tool catalog: tool packs and built-ins, their metadata and capability map, the
retrieval index over them, and the per-run toolbox a planner calls through."""
