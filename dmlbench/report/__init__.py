"""Aggregation of runs into the papers' tables and figures, and the HTML index."""
