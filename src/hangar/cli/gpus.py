"""``hangar gpus``: list and show the GPU catalog, and what NVML detects on this host."""

from __future__ import annotations

import json
from typing import Any

import click

from hangar.cli.options import json_option
from hangar.cli.terminal import escape, printable
from hangar.hardware.spec import GpuSpec

_MIB = 2**20


@click.group()
def gpus() -> None:
    """List the GPU profiles Hangar knows, or show one."""


@gpus.command("list")
@json_option(help="Print JSON instead of a table.")
def list_command(as_json: bool) -> None:
    """Every GPU in the catalog, with the facts vLLM reads through NVML."""
    from hangar.hardware.catalog import list_gpus

    specs = list_gpus()
    if as_json:
        _echo_json([_spec_json(spec) for spec in specs])
    else:
        _print_table(specs)


@gpus.command("show")
@click.argument("name")
@json_option(help="Print JSON instead of text.")
def show_command(name: str, as_json: bool) -> None:
    """One GPU, by any name Hangar accepts (H100, rtx4090, 'NVIDIA A100-SXM4-80GB', ...)."""
    from hangar.hardware.catalog import lookup

    spec = lookup(name)
    if as_json:
        _echo_json(_spec_json(spec))
    else:
        _print_details(spec)


@gpus.command("detect")
@json_option(help="Print JSON instead of a table.")
def detect_command(as_json: bool) -> None:
    """The NVIDIA GPUs this host exposes (honours CUDA_VISIBLE_DEVICES)."""
    from hangar.hardware.detect import detect_local_gpus

    found = detect_local_gpus()
    if as_json:
        _echo_json([gpu.model_dump(mode="json") for gpu in found])
        return
    for gpu in found:
        total = f"{gpu.memory_total_bytes // _MIB} MiB" if gpu.memory_total_bytes else "n/a"
        cap = ".".join(map(str, gpu.compute_capability))
        # NVML's strings are outside text: shown, never sent to the terminal as controls
        line = f"{gpu.index}: {gpu.name}  {total}  sm_{cap}  driver {gpu.driver_version}"
        click.echo(printable(line, one_line=True))


def _spec_json(spec: GpuSpec) -> dict[str, Any]:
    data = spec.model_dump(mode="json")
    data["memory_mib"] = spec.memory_bytes // _MIB
    data["memory_gib"] = round(spec.memory_gib, 2)
    return data


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def _dtypes(spec: GpuSpec) -> str:
    flags = {"bf16": spec.bf16, "fp8": spec.fp8, "fp4": spec.fp4}
    return ",".join(name for name, on in flags.items() if on) or "fp16"


def _link(spec: GpuSpec) -> str:
    """'nvlink 900', 'pcie', or 'pcie+nvlink 600' for PCIe cards with bridged pairs (GB/s)."""
    if not spec.nvlink_gbps:
        return spec.interconnect
    if spec.interconnect == "nvlink":
        return f"nvlink {spec.nvlink_gbps}"
    return f"{spec.interconnect}+nvlink {spec.nvlink_gbps}"


def _row(spec: GpuSpec) -> list[str]:
    cap = ".".join(map(str, spec.compute_capability))
    notes = [
        note for note, on in (("unified", spec.unified_memory), ("consumer", spec.consumer)) if on
    ]
    # The NVML name is left to `show` and --json: with it the table cannot fit 80 columns.
    memory = f"{spec.memory_bytes // _MIB}"
    # gpus.toml is the user's file, but any file can hold escape sequences: every cell is
    # escaped (control characters shown as \xNN, rich markup inert)
    cells = [spec.id, memory, cap, spec.generation, _link(spec), _dtypes(spec), " ".join(notes)]
    return [escape(cell) for cell in cells]


def _print_table(specs: list[GpuSpec]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0))
    for header in ("ID", "MiB", "SM", "Generation", "Link GB/s", "Dtypes", "Notes"):
        table.add_column(header, no_wrap=True, overflow="fold")
    for spec in specs:
        table.add_row(*_row(spec))
    Console().print(table)


def _memory_text(spec: GpuSpec) -> str:
    mib = spec.memory_bytes // _MIB
    return f"{spec.memory_bytes} bytes ({mib} MiB, {spec.memory_gib:.2f} GiB)"


def _print_details(spec: GpuSpec) -> None:
    lines = [
        ("id", spec.id),
        ("device name", spec.name),
        ("vendor", spec.vendor + (f" ({spec.gfx}, ROCm)" if spec.gfx else "")),
        ("aliases", ", ".join(spec.aliases) or "-"),
        ("memory", _memory_text(spec)),
        (
            "compute capability",
            ".".join(map(str, spec.compute_capability))
            + (" (as torch reports it on ROCm)" if spec.rocm else ""),
        ),
        ("generation", spec.generation),
        ("interconnect", _link(spec) + (" GB/s" if spec.nvlink_gbps else "")),
        ("dtypes", _dtypes(spec)),
        ("unified memory", "yes" if spec.unified_memory else "no"),
        ("consumer/workstation", "yes" if spec.consumer else "no"),
        ("source", spec.source),
    ]
    for label, value in lines:
        click.echo(f"{label + ':':<22}{printable(value, one_line=True)}")
