"""The HBM of the common Cloud TPU types, per XLA device: the one table verify judges memory by,
and how `--tpu-type` and `--hbm` are read. Standard library only.

What verify calls a core is an XLA device, the unit torch_xla trains one replica on. On v2 and
v3 every TensorCore is its own device with its own half of the chip's HBM; v4 and v5p run
the chip's two TensorCores as one device ("megacore"), so a device has the whole chip's HBM;
v5e and v6e chips have one TensorCore. So the figure to compare a per-core estimate with is
per TensorCore on v2/v3 and per chip from v4 on.

Google's pages give v2-v4 in GiB and v5e, v5p and v6e in "GB"; HBM stacks come in binary
sizes, and the runtime keeps part of the HBM for itself anyway (torch_xla's own example of
`xm.get_memory_info()` reports a `bytes_limit` of 34088157184 bytes, 31.7 GiB, on a 32 GiB
device), so the table reads them as GiB and a step must fit with 10% headroom.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tpulint.runtime.errors import VerifyError

GIB = 1 << 30
HEADROOM = 0.10  # within 10% of the limit is a warning: the runtime and the compiler need room


@dataclass(frozen=True)
class TpuType:
    name: str
    hbm_bytes: int  # per XLA device (what verify calls a core)
    per: str  # what the figure is per, as published: "TensorCore" or "chip"
    layout: str  # TensorCores per chip and how torch_xla presents them
    source: str
    aliases: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.name} ({format_bytes(self.hbm_bytes)} per {self.per})"


TPU_TYPES: tuple[TpuType, ...] = (
    TpuType(
        "v2",
        8 * GIB,
        "TensorCore",
        "2 TensorCores per chip, each its own device with half of the chip's 16 GiB",
        "cloud.google.com/tpu/docs/v2 (architecture in Jouppi et al., 'A Domain Specific"
        " Supercomputer for Training Deep Neural Networks', CACM 2020: 16 GiB HBM per chip)",
    ),
    TpuType(
        "v3",
        16 * GIB,
        "TensorCore",
        "2 TensorCores per chip, each its own device with half of the chip's 32 GiB",
        "cloud.google.com/tpu/docs/v3: 'HBM2 capacity and bandwidth: 32 GiB, 900 GBps' per"
        " chip; 'Each v3 TPU chip contains two TensorCores'",
    ),
    TpuType(
        "v4",
        32 * GIB,
        "chip",
        "2 TensorCores per chip run as one device (megacore)",
        "cloud.google.com/tpu/docs/v4: 'HBM2 capacity and bandwidth: 32 GiB, 1200 GBps';"
        " 'Each TPU v4 chip contains two TensorCores'",
    ),
    TpuType(
        "v5e",
        16 * GIB,
        "chip",
        "1 TensorCore per chip",
        "cloud.google.com/tpu/docs/v5e: 'HBM2 capacity and bandwidth: 16 GB, 819 GBps';"
        " 'Each v5e chip contains one TensorCore'",
        aliases=("v5litepod", "v5lite"),
    ),
    TpuType(
        "v5p",
        95 * GIB,
        "chip",
        "2 TensorCores per chip run as one device (megacore)",
        "cloud.google.com/tpu/docs/v5p: 'HBM2e capacity and bandwidth: 95 GB, 2765 GBps'",
    ),
    TpuType(
        "v6e",
        32 * GIB,
        "chip",
        "1 TensorCore per chip",
        "cloud.google.com/tpu/docs/v6e: 'HBM capacity per chip: 32 GB'; 'Each v6e chip"
        " contains one TensorCore'",
        aliases=("trillium",),
    ),
)


def format_bytes(count: float) -> str:
    """Binary units, 3 significant digits: `512 B`, `1.5 KiB`, `16 GiB`."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.3g}" if value < 100 else f"{value:.0f}"
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def find_type(text: str) -> TpuType:
    """`v5e`, `v5e-8`, `v5litepod-16`, `V4`: the type; a VerifyError listing the known ones."""
    given = text.strip().lower()
    name = re.sub(r"-\d+$", "", given)  # an accelerator type's core or chip count
    for tpu in TPU_TYPES:
        if name == tpu.name or name in tpu.aliases:
            return tpu
    known = ", ".join(t.name for t in TPU_TYPES)
    raise VerifyError(f"--tpu-type {text}: unknown TPU type; known: {known} (e.g. v5e or v5e-8)")


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "kb": 10**3,
    "m": 1 << 20,
    "mib": 1 << 20,
    "mb": 10**6,
    "g": 1 << 30,
    "gib": 1 << 30,
    "gb": 10**9,
    "t": 1 << 40,
    "tib": 1 << 40,
    "tb": 10**12,
}


def parse_size(text: str) -> int:
    """`--hbm 16GiB` (also `16G`, `16 GiB`; `16GB` is 16 * 10^9; a plain number is bytes)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise VerifyError(f"--hbm {text}: expected a size such as 16GiB, 512MiB or 17179869184")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise VerifyError(f"--hbm {text}: must be more than 0 bytes")
    return size


@dataclass(frozen=True)
class MemoryLimit:
    """What the memory check judges against: a TPU type or a size given with --hbm."""

    bytes: int
    name: str  # "v5e" or "--hbm 40MiB"
    source: str  # "tpu_type" | "hbm" | "device"
    per: str = "core"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "bytes": self.bytes, "source": self.source, "per": self.per}


def memory_limit(tpu_type: str | None, hbm: str | int | None) -> MemoryLimit | None:
    """The limit `--tpu-type` or `--hbm` asks for (None: neither); both is an error."""
    if tpu_type and hbm is not None:
        raise VerifyError("give --tpu-type or --hbm, not both")
    if tpu_type:
        found = find_type(tpu_type)
        return MemoryLimit(found.hbm_bytes, found.name, "tpu_type", found.per)
    if hbm is not None:
        size = hbm if isinstance(hbm, int) else parse_size(hbm)
        return MemoryLimit(size, f"--hbm {hbm}", "hbm")
    return None
