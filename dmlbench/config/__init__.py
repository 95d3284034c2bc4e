"""The catalogue and presets of `workflow/config/` turned into runs and per-step specs (`plan`)."""
