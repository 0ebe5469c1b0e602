"""Which XLA graphs were compiled and executed, by torch_xla's own graph hash.

Counting compiles is not enough to judge compile stability: a graph compiled once after
warm-up and then reused (the first optimizer step under gradient accumulation, Lightning's
epoch-end bookkeeping) is harmless, a stream of new graphs is not, and on emulated cores
several replica threads can race to compile the same graph in an implicit sync. torch_xla
identifies every graph by a hash of its IR and prints it, with the Python frames that
triggered it, for every compilation and execution when PT_XLA_DEBUG_LEVEL >= 2
(torch_xla/csrc/debug_util.cpp, `analyze_graph_execution_python_frame`), and after each
compilation the sizes XLA reports for it (`post_compilation_analysis`); PT_XLA_DEBUG_FILE
sends that to a file instead of stderr. The compile entry is written before XLA compiles, the
sizes after: a compile entry without its sizes is a compilation in progress.

torch_xla writes the analysis in one process per host only: both functions start with

    static const bool is_master_process =
        (runtime::sys_util::GetEnvInt("PJRT_LOCAL_PROCESS_RANK", 0) == 0);

and return when it is false. The statics are initialized at the first call in a process,
from the environment as it is then. On a TPU VM `xmp.spawn` sets PJRT_LOCAL_PROCESS_RANK in
every process before its first graph (`_internal/pjrt.py`, `initialize_multiprocess`), so
only local process 0 would write. `claim_process` is run in every replica process before its
first graph: with PJRT_LOCAL_PROCESS_RANK briefly 0 and PT_XLA_DEBUG_FILE naming a file of
that process, it runs one tiny graph, which fixes both statics (this process writes, to its
own file), and restores the variable (`xr.local_ordinal()` reads it). Child process only.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from tpulint.runtime.child import hlo_dump
from tpulint.runtime.events import host_index
from tpulint.runtime.graph_files import GraphLog, compiling_now, parse  # noqa: F401

DEBUG_PREFIX = "xla-graphs-"
# Compiles need enough frames to reach the user's line from the sync that compiled (a host
# read in the user's step is a few frames up; a sync in Lightning's loops has no user line at
# any depth); executions print the same frames, so this also bounds the file's growth.
_MAX_FRAMES = 24


# Where this process's analysis goes: the first recorder to turn it on decides (torch_xla
# writes one file per process; a TPUReadiness callback in a script verify runs reads verify's).
_directory: Path | None = None


def debug_file(run_dir: str | Path, pid: int | None = None) -> Path:
    """The analysis file of process `pid` (this one by default)."""
    directory = _directory or Path(run_dir)
    return directory / f"{DEBUG_PREFIX}{host_index()}-{pid or os.getpid()}.txt"


def configure(run_dir: str | Path, level: int = 2) -> Path:
    """Turn the analysis on for this process and the processes it starts. Must run before
    torch_xla analyses its first graph: the level is read once, at the first analysis. Level 2
    records every execution too; level 1 only compilations (a long real run). Once turned on
    in a process, later calls change nothing."""
    global _directory
    if _directory is not None:
        return debug_file(_directory)
    _directory = Path(run_dir)
    path = debug_file(run_dir)
    os.environ["PT_XLA_DEBUG_LEVEL"] = str(level)
    os.environ["PT_XLA_DEBUG_FILE"] = str(path)
    os.environ["PT_XLA_DEBUG_MAX_FRAME"] = str(_MAX_FRAMES)
    os.environ.pop("PT_XLA_DEBUG", None)  # the Python-side function tracker: not wanted
    hlo_dump.configure(run_dir)  # the HLO of each compiled graph, for the judge's diff
    return path


_claimed: dict[int, Path] = {}
_claim_lock = threading.Lock()


def claim_process(run_dir: str | Path) -> Path:
    """Make this process write its own graph analysis (see the module docstring); once per
    process, before its first graph. Returns the process's analysis file."""
    with _claim_lock:
        pid = os.getpid()
        if pid in _claimed:
            return _claimed[pid]
        path = debug_file(run_dir)
        rank_variable = "PJRT_LOCAL_PROCESS_RANK"
        saved = os.environ.get(rank_variable)
        os.environ["PT_XLA_DEBUG_FILE"] = str(path)
        os.environ[rank_variable] = "0"
        try:
            _claim_marker()
        finally:
            if saved is None:
                os.environ.pop(rank_variable, None)
            else:
                os.environ[rank_variable] = saved
        _claimed[pid] = path
        return path


def _claim_marker() -> None:
    """The tiny graph that initializes torch_xla's analysis statics in this process; its
    entries are recognised by this function's name and skipped."""
    import torch
    import torch_xla

    # Read back rather than torch_xla.sync(): the emulation's step marker waits for every
    # core of the process, and the others are waiting for this claim.
    (torch.zeros(1, device=torch_xla.device()) + 1).cpu()


def claims(entry: dict[str, Any]) -> bool:
    return any(frame[2] == _claim_marker.__name__ for frame in entry.get("frames", []))
