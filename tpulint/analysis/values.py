"""What kind of value an expression is: the kinds the rules see.

The one value inference (tpulint.analysis.inference, on `ast`, with the tables of
tpulint.analysis.value_tables) says what an expression holds; the rules ask it about the
libcst node at a position through `FileContext.value_kind` (tpulint.analysis.value_query) and
get one of these kinds back. The host-sync rules must know that `loss.item()` in
`training_step` reads a device tensor while `torch.rand(1).item()` (a CPU tensor),
`np.log(n).item()` (numpy), `mx.array(x).item()` (MLX) and `len(batch)` do not touch the
accelerator.
"""

from __future__ import annotations

import enum


class ValueKind(enum.Enum):
    DEVICE = "device"  # a torch tensor on the accelerator (or presumed so in hot code)
    CPU = "cpu"  # a torch tensor known to live in host memory
    MODULE = "module"  # an nn.Module or a metric object (`.cpu()` on it is an offload)
    NUMPY = "numpy"  # a numpy (or pandas, MLX, JAX) array or scalar
    NUMBER = "number"  # a Python number or bool
    HOST = "host"  # another value that is not a torch tensor: strings, devices, containers
    # A device (`torch.device` or its name) that is the CPU on a TPU host: `torch.device("cpu")`
    # or a CUDA/MPS chain (`"cuda" if torch.cuda.is_available() else "cpu"`).
    CPU_DEVICE = "cpu_device"
    UNKNOWN = "unknown"

    @property
    def may_be_device(self) -> bool:
        return self in (ValueKind.DEVICE, ValueKind.UNKNOWN)

    @property
    def is_host(self) -> bool:
        """Surely not a torch tensor."""
        return self in _HOST_KINDS


DEVICE, CPU, HOST, UNKNOWN = ValueKind.DEVICE, ValueKind.CPU, ValueKind.HOST, ValueKind.UNKNOWN
MODULE, NUMPY, NUMBER = ValueKind.MODULE, ValueKind.NUMPY, ValueKind.NUMBER
CPU_DEVICE = ValueKind.CPU_DEVICE
_HOST_KINDS = frozenset({HOST, MODULE, NUMPY, NUMBER, CPU_DEVICE})


def combine(kinds: list[ValueKind]) -> ValueKind:
    """The kind of a value that is any of `kinds`."""
    if not kinds:
        return UNKNOWN
    if DEVICE in kinds:
        return DEVICE
    if UNKNOWN in kinds:
        return UNKNOWN
    if CPU in kinds:
        return CPU
    distinct = set(kinds)
    return distinct.pop() if len(distinct) == 1 else HOST


def combine_elementwise(kinds: list[ValueKind]) -> ValueKind:
    """The kind of `a <op> b`: as `combine`, except that a CPU tensor with an unknown operand
    stays on the CPU (torch combines a CPU tensor elementwise only with numbers and other
    CPU tensors: `row == tokenizer.bos` for a row of `tokens.cpu()`)."""
    if CPU in kinds and DEVICE not in kinds:
        return CPU
    return combine(kinds)


_KIND_NAMES = {kind.value: kind for kind in ValueKind}


def kind_named(name: str) -> ValueKind:
    """The ValueKind of a project-model kind name ("device", "numpy", ...)."""
    return _KIND_NAMES.get(name, UNKNOWN)
