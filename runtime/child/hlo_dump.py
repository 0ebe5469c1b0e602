"""Keep the HLO of every graph XLA compiles, with the Python line of each op, so the judge can
tell what changed between two graphs (runtime/judge/graph_diff.py).

torch_xla records the Python frames of each IR node it builds when XLA_IR_DEBUG=1
(`FLAGS_torch_lazy_ir_debug`), and XLA_HLO_DEBUG=1 copies the innermost one into every HLO
instruction's metadata as `source_file`/`source_line` (torch_xla/csrc/lowering_context.cpp:54,
stack_frame_index_builder.cpp:33 in v2.9.0). XLA itself writes each module it compiles, and
only those, to `--xla_dump_to` (`module_NNNN.SyncTensorsGraph.K.before_optimizations.txt`):
compile-time evidence that costs nothing at steps that hit the cache. On a TPU the compiler
is libtpu's, which takes its XLA flags from LIBTPU_INIT_ARGS.

Neither changes a graph's hash (the IR hash covers ops, shapes and values, not metadata), so
the compile counts verify judges are the same with them (measured: identical counts and
verdicts, about 5% more wall time on the runtime suite's modules). XLA:CPU also dumps each
kernel's LLVM IR and every later stage, about a hundred files per graph; a thread of this
(the child's main) process deletes all but the HLO the judge reads, so the run directory
stays small. Child process only; standard library only; must run before torch_xla is
imported.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

DUMP_DIR = "hlo"
SUFFIX = ".before_optimizations.txt"
_PRUNE_EVERY = 1.0  # seconds


def configure(run_dir: str) -> Path:
    path = Path(run_dir) / DUMP_DIR
    os.environ["XLA_IR_DEBUG"] = "1"
    os.environ["XLA_HLO_DEBUG"] = "1"
    flags = f"--xla_dump_to={path} --xla_dump_hlo_as_text"
    for variable in ("XLA_FLAGS", "LIBTPU_INIT_ARGS"):
        current = os.environ.get(variable, "")
        if "--xla_dump_to" not in current:  # the user's own dump wins (then no diff)
            os.environ[variable] = f"{current} {flags}".strip()
    threading.Thread(target=_prune_forever, args=(path,), name="tpulint-hlo", daemon=True).start()
    return path


def prune(path: Path) -> None:
    """Delete every dumped file but the HLO before optimizations."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        if entry.is_file() and not entry.name.endswith(SUFFIX):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _prune_forever(path: Path) -> None:
    # A thread of the child's main process: the replica processes Lightning forks do not
    # inherit it, and they write to the same folder.
    while True:
        time.sleep(_PRUNE_EVERY)
        prune(path)
