"""Evaluation from trajectories: questions, the runner, metrics and scoring, resumable
result folders, the HTML report, and the Ray backend."""
