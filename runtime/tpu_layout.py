"""How big an array is in a TPU's memory: the dtype it has there and the tiles it is laid out in.

Used by the training child (to pick the peak set of saved tensors) and by the judge (to size
every part of the memory estimate). Standard library only; dtypes are torch's names without
the `torch.` prefix ("float32", "bfloat16", "int64", "bool").

The dtype on the TPU. Under Lightning's `precision="bf16-true"` the XLA precision plugin sets
`XLA_USE_BF16=1` (lightning/pytorch/plugins/precision/xla.py, XLAPrecision.__init__), and
torch_xla then stores every float32 and float64 tensor as bf16 on the device
(torch_xla/csrc/dtype.cpp, MaybeDowncastToXlaDeviceType: F32 and F64 -> BF16 when UseBF16()).
Other precisions keep the dtype the run has: Lightning's XLA plugin accepts only 32-true,
16-true and bf16-true, and the `XLA_USE_F16` that 16-true sets is not read by torch_xla 2.9
(the string is not in its `_XLAC` library), so a 16-true run is float32 on the TPU.

The tiles. XLA lays a TPU array out in tiles over its two most minor dimensions
(openxla/xla docs/tiled_layout.md, "Tiled layout"):

* 32-bit types: 8 x 128 ("The most common format in XLA/TPU is tiling by 8x128, which matches
  the 32-bit 8x128 vector registers on a TPU"); when the second most minor dimension is 1 or
  2, XLA tiles by 2 x 128, when it is 3 or 4 by 4 x 128 ("TPU small tile format").
* 16-bit types: the (2,1) sub-tiling packs two rows into one 32-bit word ("TPU 16 bit tile
  format", (8,128)(2,1)), so a full 32-bit 8 x 128 register holds 16 x 128 values; we pad
  the rows of 16-bit arrays to 16 (T(16,128)(2,1), the layout torch_tpu's layout hints use).
  Where XLA picks the (8,128)(2,1) tile instead, an array with a row count that is a multiple
  of 8 but not 16 is estimated 8 rows too large.
* 8-bit types: (8,128)(4,1), four rows per word: rows padded to 32.
* bool (PRED): "TPUs currently use 4 bytes for one boolean value": a 32-bit type here.
* 64-bit types are two 32-bit halves on the TPU: 8 bytes an element, 32-bit tiles.

Which two dimensions are the minor ones is XLA's choice (its TPU layout assignment picks each
array's physical dimension order, e.g. `f32[128,256,896,18]{0,3,2,1:T(8,128)}`, batch
minor, in an out-of-memory report); for arrays of rank 2 or more we take the pair of
dimensions that pads least. (In the logical order a [B, 512, 7, 7] feature map would be 20
times its size; no TPU stores it so.)

Rank-1 arrays use a linear layout (tiled_layout.md: "a less wasteful linear-like format used
for rank 1"): XLA's TPU HLO shows `f32[10]{0:T(256)}`, `f32[128]{0:T(256)}`,
`f32[1024]{0:T(1024)}`, `bf16[6144]{0:T(1024)(128)(2,1)}`; we pad the length to a multiple
of 256 below 1024 elements and of 1024 from there. A scalar (`f32[]{:T(256)}`) counts as one
256-element tile: 1 KiB in 32 bits, an upper bound for a value that often lives in scalar
memory instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

LANES = 128  # the minor dimension's tile
_ROWS_32 = 8  # the second most minor dimension's tile for 32-bit types
_LINEAR_SMALL = 256  # rank-1 tile below _LINEAR_LARGE elements
_LINEAR_LARGE = 1024

# Bytes per element as the run holds them (torch's element sizes).
HOST_BYTES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
}

# Bytes per element on the TPU, where they differ from the host's.
_TPU_BYTES = {"bool": 4}

BF16_PRECISIONS = ("bf16-true",)


def dtype_name(dtype: object) -> str:
    """`torch.float32` -> "float32" (a str is taken as it is)."""
    return str(dtype).removeprefix("torch.")


def tpu_dtype(dtype: str, precision: str | None) -> str:
    """The dtype a tensor of `dtype` has on the TPU under the Trainer's `precision`."""
    if str(precision) in BF16_PRECISIONS and dtype in ("float32", "float64"):
        return "bfloat16"
    return dtype


def host_bytes(shape: Sequence[int], dtype: str) -> int:
    """The bytes of the array as the run holds it: elements times the element size."""
    return math.prod(shape) * HOST_BYTES.get(dtype, 4)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _row_tile(rows: int, element_bytes: int) -> int:
    """The tile of the second most minor dimension: 2 or 4 rows for short dimensions (the
    small tile format), else 8 rows of 32-bit words, each word packing 4 / bytes values."""
    if rows <= 2:
        return 2
    if rows <= 4:
        return 4
    return _ROWS_32 * max(1, 4 // element_bytes)


def tpu_bytes(shape: Sequence[int], dtype: str, precision: str | None = None) -> int:
    """The bytes of the array in a TPU's memory: its TPU dtype, tiled (module docstring)."""
    on_tpu = tpu_dtype(dtype, precision)
    element = _TPU_BYTES.get(on_tpu, HOST_BYTES.get(on_tpu, 4))
    dims = [int(d) for d in shape]
    if any(d == 0 for d in dims):
        return 0
    if len(dims) <= 1:
        length = dims[0] if dims else 1
        tile = _LINEAR_SMALL if length < _LINEAR_LARGE else _LINEAR_LARGE
        return _round_up(length, tile) * element
    best = None
    for second in range(len(dims)):
        for minor in range(len(dims)):
            if second == minor:
                continue
            rows, cols = dims[second], dims[minor]
            others = math.prod(d for i, d in enumerate(dims) if i not in (second, minor))
            padded = others * _round_up(rows, _row_tile(rows, element)) * _round_up(cols, LANES)
            best = padded if best is None else min(best, padded)
    assert best is not None
    return best * element


def total_tpu_bytes(arrays: Iterable[tuple[Sequence[int], str, int]], precision: str | None) -> int:
    """Sum over (shape, dtype, count) records."""
    return sum(tpu_bytes(shape, dtype, precision) * count for shape, dtype, count in arrays)


def total_host_bytes(arrays: Iterable[tuple[Sequence[int], str, int]]) -> int:
    return sum(host_bytes(shape, dtype) * count for shape, dtype, count in arrays)
