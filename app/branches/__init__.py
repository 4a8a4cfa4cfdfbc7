"""Branches: the turn's tree of runs, branching from a step, Sample N."""
