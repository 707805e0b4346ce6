"""Options shared by several commands, defined once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def hardware_options(func: F) -> F:
    """--gpu/--gpus/--nodes; without --gpu the local GPUs are detected through NVML."""
    func = click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True,
                        help="Number of nodes.")(func)
    func = click.option("--gpus", type=click.IntRange(min=1),
                        help="GPUs per node (default: 1 with --gpu, all detected otherwise).")(func)
    func = click.option("--gpu", help="GPU kind from the catalog (H100, a100-40gb, rtx4090...).")(func)
    return func


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(func)
