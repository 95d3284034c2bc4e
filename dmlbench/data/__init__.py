"""Datasets: acquisition, parsing of the publishers' lists into one manifest format, fixtures, cache."""
