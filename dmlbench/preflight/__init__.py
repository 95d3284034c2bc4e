"""Preflight: every distinct code path of a preset's runs executed once on fixtures, and the
compute budget of the plan projected from what it measured (`python -m dmlbench preflight`)."""
