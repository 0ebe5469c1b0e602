"""torch.distributed calls in the user's code, under Lightning's XLA strategy.

Lightning's XLA strategy communicates through torch_xla (`xm.all_gather`, `xm.mesh_reduce`,
`xm.rendezvous`: lightning/pytorch/strategies/xla.py) and never initialises torch.distributed's
default process group. Code written for DDP that asks torch.distributed then behaves as one
process on every core: `dist.is_initialized()` is False, so a contrastive loss skips its
gather of negatives and an IterableDataset that shards by `dist.get_rank()` reads rank 0's
share on every core; an unguarded `dist.get_rank()` raises.

Each call from a line of the user's is recorded once per line (`torch_distributed` events,
with what it returned); the judge reports them at their line. Child process only: imports
torch.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

from tpulint.runtime.events import EventLog
from tpulint.runtime.frames import CodeFilter

from tpulint.datatypes.torch_distributed import COLLECTIVES, QUERIES

# The process-group queries and collectives DDP code uses.
_FUNCTIONS = (*sorted(QUERIES), *sorted(COLLECTIVES))
_NN_FUNCTIONS = ("all_gather", "all_reduce", "broadcast", "all_to_all", "reduce_scatter")


class _Recorder:
    def __init__(self, log: EventLog, code: CodeFilter) -> None:
        self.log = log
        self.code = code
        self._seen: set[tuple[str, str, int]] = set()
        self._lock = threading.Lock()

    def wrap(self, module: Any, name: str, shown: str) -> None:
        original = getattr(module, name, None)
        if original is None or getattr(original, "_tpulint", False):
            return

        @functools.wraps(original)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            try:
                result = original(*args, **kwargs)
            except Exception as exc:
                self.record(shown, sys._getframe(1), None, type(exc).__name__)
                raise
            self.record(shown, sys._getframe(1), result, None)
            return result

        recorded._tpulint = True  # type: ignore[attr-defined]
        setattr(module, name, recorded)

    def record(self, name: str, frame: Any, result: Any, raised: str | None) -> None:
        # Only a direct call from the user's code: a library asking (torchmetrics, Lightning's
        # own utilities) from under a user's line is the library's business.
        if frame is None or not self.code.is_user(frame.f_code.co_filename):
            return
        site = self.code.site_of(frame, fallback=False)
        if site is None:
            return
        key = (name, site.path, site.line)
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        self.log.write(
            "torch_distributed",
            name=name,
            site=site.to_json(),
            result=result if isinstance(result, (bool, int)) else None,
            raised=raised,
            thread=threading.get_ident(),
        )


def install(log: EventLog, code: CodeFilter) -> None:
    """Record the user's calls of torch.distributed (before the user's code is imported)."""
    import torch.distributed as dist

    recorder = _Recorder(log, code)
    for name in _FUNCTIONS:
        recorder.wrap(dist, name, f"torch.distributed.{name}")
    try:
        import torch.distributed.nn.functional as nn_functional
    except ImportError:  # a build without torch.distributed.nn
        return
    for name in _NN_FUNCTIONS:
        recorder.wrap(nn_functional, name, f"torch.distributed.nn.functional.{name}")
