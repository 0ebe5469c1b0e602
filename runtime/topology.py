"""What verify trains on: the TPU VM it runs on (its type, cores, processes, hosts), or the
emulated one. Standard library only: `tpulint doctor` and the verify parent import no torch.

How torch_xla 2.9 lays the cores out on a TPU VM (`torch_xla/_internal/tpu.py`,
`_internal/pjrt.py`): one process per chip (`num_local_processes()`: the TPU chips on the PCI
bus), one thread per XLA device in each (`_run_thread_per_device`), and
`num_available_devices()` = chips x devices per chip, 2 on v2 and v3 (two TensorCores, each a
device) and 1 from v4 on (v4 and v5p fuse a chip's two TensorCores into one "megacore"
device; v5e and v6e chips have one TensorCore):

    TPU VM           chips  devices  processes x devices per process
    v2-8, v3-8           4        8  4 x 2
    v4-8, v5p-8          4        4  4 x 1
    v5e-8, v6e-8         8        8  8 x 1
    v5e-4, v6e-4         4        4  4 x 1
    v5e-1, v6e-1         1        1  1 x 1

Lightning accepts `devices` = 1 or all of them (`fabric/accelerators/xla.py`,
`_check_tpu_devices_valid`: `devices in {1, device_count}`).
"""

from __future__ import annotations

import glob
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.errors import VerifyError

# torch_xla/_internal/tpu.py: a TPU chip is a Google PCI device with one of these ids (the
# vendor id alone also matches gVNIC network cards on every GCE VM). 0x0027 is v2 and v3,
# whose chips hold two XLA devices each.
GOOGLE_PCI_VENDOR = "0x1ae0"
TPU_PCI_DEVICES = {"0x0027", "0x005e", "0x0063", "0x006f", "0x0056", "0x0062", "0x0076"}
_TWO_CORE_CHIPS = {"0x0027"}
_METADATA = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/"

# Generations whose type names count TensorCores (v4-8: 8 TensorCores, 4 chips) rather than
# chips (v5e-8, "v5litepod-8": 8 chips), and devices per chip.
_COUNTS_TENSORCORES = {"v2", "v3", "v4", "v5p"}
_DEVICES_PER_CHIP = {"v2": 2, "v3": 2}
# The single-host types `--emulate` reproduces.
EMULATED_TYPES = (
    "v2-8",
    "v3-8",
    "v4-8",
    "v5p-8",
    "v5e-1",
    "v5e-4",
    "v5e-8",
    "v6e-1",
    "v6e-4",
    "v6e-8",
)
THREADS = "threads"


@dataclass(frozen=True)
class TpuType:
    """A Cloud TPU accelerator type, e.g. `v4-8` (`v5litepod-8` is `v5e-8`)."""

    name: str
    generation: str  # v2, v3, v4, v5p, v5e, v6e, ...
    chips: int  # in the whole slice

    @classmethod
    def parse(cls, text: str) -> TpuType | None:
        match = re.fullmatch(r"(v\d+[a-z]*|tpu\d+[a-z]*)-(\d+)", text.strip().lower())
        if not match:
            return None
        generation, count = match.group(1), int(match.group(2))
        if generation == "v5litepod":
            generation = "v5e"
        if generation == "v5lite":
            generation = "v5e"
        chips = count // 2 if generation in _COUNTS_TENSORCORES and count > 1 else count
        return cls(f"{generation}-{count}", generation, max(1, chips))

    @property
    def devices_per_chip(self) -> int:
        return _DEVICES_PER_CHIP.get(self.generation, 1)


@dataclass
class Topology:
    """Where verify's cores are: `processes` processes of `devices_per_process` XLA devices
    each on this host, `hosts` hosts in the slice."""

    device: str  # "TPU" or "CPU" (emulated)
    emulated: bool
    local_devices: int
    processes: int
    devices_per_process: int
    tpu_type: str | None = None  # v4-8, real or emulated; None: unknown or plain emulation
    hosts: int = 1
    worker: int | None = None  # this host's index in a multi-host slice
    chips: int | None = None  # TPU chips on this host's PCI bus
    notes: list[str] = field(default_factory=list)  # how it was found, what is uncertain

    @property
    def allowed_cores(self) -> list[int]:
        """`--cores` values Lightning accepts here: 1 or every local device."""
        return sorted({1, self.local_devices})

    @property
    def layout(self) -> str:
        return (
            f"{self.processes} process{'es' if self.processes != 1 else ''} x"
            f" {self.devices_per_process} device{'s' if self.devices_per_process != 1 else ''}"
        )

    def name(self) -> str:
        """`a v4-8`, `8 emulated cores`, for one-line messages."""
        if self.device == "TPU":
            return f"this {self.tpu_type or 'TPU VM'}"
        if self.tpu_type:
            return f"the emulated {self.tpu_type}"
        return f"{self.local_devices} emulated cores"

    def check_cores(self, cores: int | None) -> int:
        """The cores to train on: every local device by default; else 1 or all of them,
        checked before anything starts (Lightning would refuse the rest in every process)."""
        if cores is None:
            return self.local_devices
        if cores in self.allowed_cores:
            return cores
        what = (
            f"{self.local_devices} TPU core{'s' if self.local_devices != 1 else ''} ({self.layout})"
        )
        accepted = " or ".join(str(c) for c in self.allowed_cores)
        raise VerifyError(
            f"--cores {cores}: {self.name()} has {what}; Lightning trains on 1 core or on all"
            f" of them, so --cores accepts {accepted}"
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["allowed_cores"] = self.allowed_cores
        return data


def tpu_chips(root: str = "/sys/bus/pci/devices") -> list[str]:
    """The PCI device ids of the TPU chips on this host (torch_xla's own test)."""
    found = []
    for vendor_path in sorted(glob.glob(os.path.join(root, "*", "vendor"))):
        try:
            if Path(vendor_path).read_text().strip() != GOOGLE_PCI_VENDOR:
                continue
            device = (Path(vendor_path).parent / "device").read_text().strip()
        except OSError:
            continue
        if device in TPU_PCI_DEVICES:
            found.append(device)
    return found


def _metadata(key: str, timeout: float = 1.0) -> str | None:
    """A GCE instance attribute (what torch_xla's `_get_metadata` reads), or None."""
    request = urllib.request.Request(_METADATA + key, headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _tpu_env(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str], str]:
    """torch_xla's `get_tpu_env()` and `get_worker_ips()`, read the same way: from the
    environment when TPU_SKIP_MDS_QUERY is set, else from the metadata server."""
    if environ.get("TPU_SKIP_MDS_QUERY"):
        env = {
            "ACCELERATOR_TYPE": environ.get("TPU_ACCELERATOR_TYPE", ""),
            "WORKER_ID": environ.get("CLOUD_TPU_TASK_ID", environ.get("TPU_WORKER_ID", "")),
        }
        hosts = [h for h in environ.get("TPU_WORKER_HOSTNAMES", "").split(",") if h]
        return env, hosts, "environment (TPU_SKIP_MDS_QUERY)"
    env: dict[str, str] = {}
    text = _metadata("tpu-env")
    if text:
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip():
                env[key.strip()] = value.strip().strip("'\"")
    if not env.get("ACCELERATOR_TYPE"):
        accelerator = _metadata("accelerator-type")
        if accelerator:
            env["ACCELERATOR_TYPE"] = accelerator.strip()
    endpoints = _metadata("worker-network-endpoints") or ""
    hosts = [w.split(":")[2] for w in endpoints.split(",") if w.count(":") >= 2]
    source = "GCE metadata" if env else "PCI bus only (the metadata server did not answer)"
    return env, hosts, source


def tpu_topology(environ: Mapping[str, str] = os.environ, chips: list[str] | None = None):
    """This TPU VM, as torch_xla will lay it out."""
    found = tpu_chips() if chips is None else chips
    env, hosts, source = _tpu_env(environ)
    parsed = TpuType.parse(env.get("ACCELERATOR_TYPE", "")) if env.get("ACCELERATOR_TYPE") else None
    per_chip = 2 if any(c in _TWO_CORE_CHIPS for c in found) else 1
    if parsed is not None:
        per_chip = parsed.devices_per_chip
    count = len(found)
    notes = [f"found from {source}"]
    if not count and parsed is not None:
        count = parsed.chips
        notes.append("no TPU chip on the PCI bus: counts from the accelerator type")
    host_count = max(1, len(hosts))
    if parsed is not None and count and parsed.chips > count:
        host_count = max(host_count, -(-parsed.chips // count))
    worker = env.get("WORKER_ID", "")
    return Topology(
        device="TPU",
        emulated=False,
        local_devices=max(1, count * per_chip),
        processes=max(1, count),
        devices_per_process=per_chip,
        tpu_type=parsed.name if parsed else None,
        hosts=host_count,
        worker=int(worker) if str(worker).isdigit() else None,
        chips=count,
        notes=notes,
    )


def emulated_topology(emulate: str | None, cores: int | None, default: int) -> Topology:
    """The emulated cores: a TPU VM's layout (`--emulate v4-8`), or N threads of one process."""
    if emulate and emulate != THREADS:
        parsed = TpuType.parse(emulate)
        if parsed is None or parsed.name not in EMULATED_TYPES:
            raise VerifyError(
                f"--emulate {emulate}: not a TPU VM type verify emulates; use one of"
                f" {', '.join(EMULATED_TYPES)} (or `threads`)"
            )
        devices = parsed.chips * parsed.devices_per_chip
        return Topology(
            device="CPU",
            emulated=True,
            local_devices=devices,
            processes=parsed.chips,
            devices_per_process=parsed.devices_per_chip,
            tpu_type=parsed.name,
            chips=parsed.chips,
            notes=[f"PJRT CPU: {parsed.chips} processes as on a {parsed.name}"],
        )
    count = cores or default
    return Topology(
        device="CPU",
        emulated=True,
        local_devices=count,
        processes=1,
        devices_per_process=count,
        notes=["PJRT CPU: the cores are threads of one process"],
    )


def topology_json(topology: Topology) -> str:
    return json.dumps(topology.to_json())
