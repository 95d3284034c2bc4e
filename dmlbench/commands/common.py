"""What the command modules share: the catalogue folder, JSON arguments, number options."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dmlbench.core.errors import DmlbenchError

# the checkout's catalogue, whatever the working folder (`snakemake -d` writes results elsewhere);
# a package installed without its checkout reads the working folder's
CHECKOUT_CONFIG = Path(__file__).resolve().parents[2] / "workflow" / "config"
CONFIG_DIR = str(CHECKOUT_CONFIG) if CHECKOUT_CONFIG.is_dir() else "workflow/config"
CONFIG_DIR_HELP = "the catalogue folder (default: this checkout's workflow/config)"


def spec_json(text: str, option: str = "--spec") -> dict:
    """The JSON object an option carries (settings: a mapping), or a one-line refusal naming it."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise DmlbenchError(f"{option} is not valid JSON: {error}") from None
    except RecursionError:
        raise DmlbenchError(
            f"{option} is nested too deeply to be settings ({len(text)} characters): "
            f"give the settings the workflow writes"
        ) from None
    if not isinstance(value, dict):
        raise DmlbenchError(f'{option} must be a JSON object ({{"key": value, …}}), not {type(value).__name__}')
    return value


def side_option(s) -> None:
    s.add_argument(
        "--side",
        default="{}",
        help="JSON: the side settings (tracking, keep, loader) the "
        "workflow passes apart from --spec (no rerun trigger)",
    )


def whole(text: str) -> int:
    """A whole number ≥ 0 (an option where 0 means none)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 0")
    return value


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 1")
    return value


def max_image_pixels_option(s) -> None:
    s.add_argument(
        "--max-image-pixels",
        type=positive,
        default=None,
        help="refuse images of more pixels (data.max_image_pixels; default: PIL's limit)",
    )


def preset_with_results(pattern: str, what: str) -> str:
    """The one preset whose results match `pattern` (a glob whose first `*` is the preset's name,
    from the current folder): a command's default when no preset is given; refused naming the
    presets that have results, or saying none has."""
    head = pattern.split("*", 1)[0]
    found = sorted({str(path.relative_to(head)).split("/")[0] for path in Path(".").glob(pattern)})
    if len(found) == 1:
        return found[0]
    if found:
        raise DmlbenchError(f"{what} exist for the presets {', '.join(found)}: choose one with --preset")
    raise DmlbenchError(
        f"no preset has {what} yet here: run the workflow first (`make demo`, or "
        f"snakemake --config preset=NAME), or give --preset NAME"
    )
