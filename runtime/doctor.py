"""`tpulint doctor`: what verify would run on, in a second, without training or importing torch.

The backend (a TPU VM and its type, or emulated cores), the cores and how torch_xla lays them
out (processes x devices, hosts), the `--cores` values Lightning accepts, the installed
versions and the combinations known not to work, the environment variables that change what
runs, and a libtpu lock file left behind. Standard library and click only.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import click
from tpulint.runtime.environment import (
    EMULATED_DEFAULT_CORES,
    EMULATION_TORCH_XLA,
    Backend,
    detect_backend,
    installed_version,
)
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.libtpu import LockStatus, lock_status
from tpulint.runtime.pods import pod_message
from tpulint.runtime.topology import Topology, emulated_topology, tpu_topology

# Variables that change what torch_xla or verify do, and why they matter.
_VARIABLES = {
    "PJRT_DEVICE": "the XLA backend (verify sets TPU on a TPU VM, CPU elsewhere)",
    "XLA_USE_BF16": "stores every float tensor as bf16 on the device (Lightning sets it for"
    " bf16-true; deprecated since torch_xla 2.6)",
    "XLA_USE_F16": "not read by torch_xla 2.9: 16-true runs float32",
    "XLA_DOWNCAST_BF16": "deprecated since torch_xla 2.6",
    "PT_XLA_DEBUG": "torch_xla's debug output (verify runs without it)",
    "PT_XLA_DEBUG_LEVEL": "torch_xla's graph analysis (verify sets its own)",
    "XLA_IR_DEBUG": "changes graph hashes (verify runs without it)",
    "XLA_HLO_DEBUG": "changes graph hashes (verify runs without it)",
    "XLA_FLAGS": "XLA compiler flags",
    "CPU_NUM_DEVICES": "emulated cores per process (verify sets it)",
    "XLA_THREAD_POOL_SIZE": "XLA:CPU's execution threads (verify raises it when emulating)",
    "PJRT_LOCAL_PROCESS_RANK": "set by xmp.spawn in each process; set by hand, every process"
    " inherits it",
    "PJRT_LOCAL_PROCESS_COUNT": "set by xmp.spawn in each process",
}


@dataclass
class Diagnosis:
    backend: Backend
    topology: Topology | None
    versions: dict[str, str | None]
    problems: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    lock: LockStatus | None = None
    refusal: str | None = None  # why verify would refuse to run here

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": {"device": self.backend.device, "emulated": self.backend.emulated},
            "topology": self.topology.to_json() if self.topology else None,
            "versions": self.versions,
            "problems": self.problems,
            "environment": self.environment,
            "libtpu_lock": self.lock.line() if self.lock else None,
            "libtpu_lock_stale": bool(self.lock and self.lock.stale),
            "verify_refuses": self.refusal,
        }


def _minor(version: str | None) -> str | None:
    if not version:
        return None
    parts = version.split("+")[0].split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else version


def version_problems(versions: dict[str, str | None], emulated: bool) -> list[str]:
    """Combinations known not to work (what the installed packages say about each other)."""
    problems = []
    torch, torch_xla = versions.get("torch"), versions.get("torch_xla")
    if not torch_xla:
        problems.append("torch_xla is not installed: pip install 'tpulint[xla]'")
    if not torch:
        problems.append("torch is not installed: pip install 'tpulint[xla]'")
    if torch and torch_xla and _minor(torch) != _minor(torch_xla):
        problems.append(
            f"torch {torch} and torch_xla {torch_xla} differ: each torch_xla release is built"
            " for the torch release of the same number (its C extension fails to load otherwise)"
        )
    if emulated and torch_xla and _minor(torch_xla) != EMULATION_TORCH_XLA:
        problems.append(
            f"TPU emulation on CPU supports torch_xla {EMULATION_TORCH_XLA}.x only, found"
            f" {torch_xla}"
        )
    for package in ("lightning", "pytorch_lightning"):
        value = versions.get(package)
        if value and (_minor(value) or "0").split(".")[0].isdigit():
            major = int((_minor(value) or "0").split(".")[0])
            if major < 2:
                problems.append(
                    f"{package} {value}: verify trains with Lightning 2's XLA strategy (>= 2.1)"
                )
    if not versions.get("lightning"):
        problems.append("lightning is not installed: pip install 'tpulint[xla]'")
    lightning, standalone = versions.get("lightning"), versions.get("pytorch_lightning")
    if lightning and standalone and _minor(lightning) != _minor(standalone):
        problems.append(
            f"lightning {lightning} and pytorch_lightning {standalone} differ: a module written"
            " against one and callbacks of the other do not mix"
        )
    return problems


def diagnose(emulate: str | None = None, environ: dict[str, str] | None = None) -> Diagnosis:
    environ = dict(os.environ if environ is None else environ)
    backend = detect_backend(environ)
    versions = {
        name: installed_version(distribution)
        for name, distribution in (
            ("python", None),
            ("torch", "torch"),
            ("torch_xla", "torch_xla"),
            ("libtpu", "libtpu"),
            ("lightning", "lightning"),
            ("pytorch_lightning", "pytorch-lightning"),
            ("jsonargparse", "jsonargparse"),
        )
        if distribution
    }
    versions = {"python": sys.version.split()[0], **versions}
    diagnosis = Diagnosis(backend, None, versions)
    try:
        if backend.emulated:
            diagnosis.topology = emulated_topology(emulate, None, EMULATED_DEFAULT_CORES)
        else:
            diagnosis.topology = tpu_topology(environ)
            if diagnosis.topology.hosts > 1:
                diagnosis.refusal = pod_message(diagnosis.topology)
    except VerifyError as exc:
        diagnosis.problems.append(exc.message)
    diagnosis.problems += version_problems(versions, backend.emulated)
    requested = environ.get("PJRT_DEVICE", "")
    if requested and requested.upper() not in ("TPU", "CPU"):
        diagnosis.problems.append(
            f"PJRT_DEVICE={requested}: verify trains on TPU cores or emulates them on CPU"
        )
    diagnosis.environment = {
        name: environ[name]
        for name in sorted(environ)
        if name in _VARIABLES or name.startswith("TPU_")
    }
    diagnosis.lock = lock_status()
    if diagnosis.lock.stale:
        diagnosis.problems.append(diagnosis.lock.line())
    return diagnosis


def render(diagnosis: Diagnosis) -> str:
    topology = diagnosis.topology
    lines = ["tpulint doctor"]

    def row(label: str, value: str) -> None:
        lines.append(f"  {label:<12} {value}")

    if diagnosis.backend.emulated:
        backend = "emulated: PJRT CPU (no TPU chip on this machine)"
        if os.environ.get("PJRT_DEVICE", "").upper() == "CPU":
            backend = "emulated: PJRT CPU (PJRT_DEVICE=CPU)"
    else:
        backend = f"TPU{f' {topology.tpu_type}' if topology and topology.tpu_type else ''}"
    row("backend", backend)
    if topology is not None:
        if topology.emulated and topology.tpu_type:
            cores = (
                f"{topology.local_devices} emulated, as on a {topology.tpu_type}: {topology.layout}"
            )
        elif topology.emulated:
            cores = (
                f"{topology.local_devices} emulated by default, threads of one process"
                " (--emulate TYPE reproduces a TPU VM's processes)"
            )
        else:
            chips = f"{topology.chips} chips, " if topology.chips is not None else ""
            cores = f"{topology.local_devices} ({chips}{topology.layout})"
        row("cores", cores)
        row(
            "hosts",
            str(topology.hosts)
            + (f" (this is worker {topology.worker})" if topology.worker is not None else ""),
        )
        accepted = " or ".join(str(c) for c in topology.allowed_cores)
        row("--cores", f"{accepted} (default {topology.local_devices})")
        if not topology.emulated:
            for note in topology.notes:
                row("", note)
    versions = ", ".join(f"{name} {value}" for name, value in diagnosis.versions.items() if value)
    missing = [
        name + (" (a TPU VM's runtime)" if name == "libtpu" else "")
        for name, value in diagnosis.versions.items()
        if not value and not (name == "libtpu" and diagnosis.backend.emulated)
    ]
    row("versions", versions + (f"; not installed: {', '.join(missing)}" if missing else ""))
    if diagnosis.environment:
        for index, (name, value) in enumerate(diagnosis.environment.items()):
            why = _VARIABLES.get(name, "TPU runtime setting")
            row("environment" if index == 0 else "", f"{name}={value}: {why}")
    else:
        row("environment", "none of PJRT_DEVICE, XLA_*, PT_XLA_*, TPU_* is set")
    row("libtpu lock", diagnosis.lock.line() if diagnosis.lock else "-")
    if diagnosis.refusal:
        row("verify", f"refuses: {diagnosis.refusal}")
    if diagnosis.problems:
        for index, problem in enumerate(diagnosis.problems):
            row("problems" if index == 0 else "", problem)
    else:
        row("problems", "none known")
    return "\n".join(lines) + "\n"


@click.command(
    "doctor",
    help="Show what `tpulint verify` would run on, without training: the backend, the TPU"
    " type or the emulated cores, processes x devices, hosts, the --cores it accepts, the"
    " installed versions and known incompatibilities, the environment variables that matter,"
    " and a libtpu lock file left behind. Exit status: 0, or 1 when a problem was found.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option("--emulate", metavar="TPU_TYPE", default=None, help="Show that TPU VM's layout")
@click.option("--json", "as_json", is_flag=True, help="Print the diagnosis as JSON")
def doctor_command(emulate: str | None, as_json: bool) -> None:
    diagnosis = diagnose(emulate)
    if as_json:
        click.echo(json.dumps(diagnosis.to_json(), indent=2))
    else:
        click.echo(render(diagnosis), nl=False)
    sys.exit(1 if diagnosis.problems else 0)
