"""dmlbench: a benchmark reproduction suite for deep metric learning."""

__version__ = "0.1.0"
