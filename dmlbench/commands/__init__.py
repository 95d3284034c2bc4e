"""The subcommands of `python -m dmlbench`, by kind; `dmlbench.cli` assembles them."""
