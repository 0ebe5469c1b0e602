"""Which stack frames are the user's code, so that every transfer, shape-dependent op and
collective is reported at the user's file:line rather than inside torch or Lightning.
Standard library only.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from types import FrameType, TracebackType

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    function: str
    user: bool  # False: the innermost library frame, used when no user frame is on the stack

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "function": self.function, "user": self.user}


def _library_dirs() -> list[str]:
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, _RUNTIME_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(path)
    dirs.update(getattr(site, "getsitepackages", lambda: [])())
    return [os.path.join(os.path.realpath(d), "") for d in dirs if d]


class CodeFilter:
    """Decides whether a source file is the user's: under one of `roots` (the target's package,
    the working directory) and not installed (site-packages, dist-packages, the interpreter's
    own directories) nor tpulint itself."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots = sorted({os.path.join(os.path.realpath(r), "") for r in roots}, key=len)
        self._library = _library_dirs()
        self._cache: dict[str, bool] = {}

    def add_roots(self, roots: Iterable[str]) -> None:
        """More directories of the user's code (known once the target is imported)."""
        self.roots = sorted(
            set(self.roots) | {os.path.join(os.path.realpath(r), "") for r in roots}, key=len
        )
        self._cache.clear()

    def is_user(self, filename: str) -> bool:
        known = self._cache.get(filename)
        if known is not None:
            return known
        result = False
        if filename and not filename.startswith("<"):
            real = os.path.realpath(filename)
            # Installed code is never the user's, even when the target itself is installed
            # (verifying lightning's own demo module must not make all of lightning user
            # code) or the project root contains its venv (./venv/lib/.../site-packages).
            under_root = any(real.startswith(r) for r in self.roots)
            installed = any(real.startswith(d) for d in self._library) or any(
                os.sep + marker + os.sep in real for marker in ("site-packages", "dist-packages")
            )
            result = under_root and not installed
        self._cache[filename] = result
        return result

    def site_of(self, frame: FrameType | None, *, fallback: bool = True) -> Site | None:
        """The innermost user frame at or above `frame`; else (with `fallback`) the innermost
        frame outside torch internals, so Lightning's own host reads are still placed."""
        first_other: FrameType | None = None
        while frame is not None:
            filename = frame.f_code.co_filename
            if self.is_user(filename):
                return Site(filename, frame.f_lineno, frame.f_code.co_name, True)
            if first_other is None and fallback and _is_reportable_library(filename):
                first_other = frame
            frame = frame.f_back
        if first_other is None:
            return None
        return Site(
            first_other.f_code.co_filename, first_other.f_lineno, first_other.f_code.co_name, False
        )

    def sites_of_frames(
        self, frames: Iterable[tuple[str, int, str]]
    ) -> tuple[Site | None, Site | None]:
        """For a stack given innermost first as (path, line, function): the innermost user
        frame, and the library frame it called into (the function that did the work, e.g.
        torch.nn.Transformer's forward reading a mask), or the innermost reportable library
        frame when no user frame is on the stack."""
        library: Site | None = None
        for path, line, function in frames:
            if self.is_user(path):
                return Site(path, line, function, True), library
            if _is_reportable_library(path):
                library = Site(path, line, function, False)
        return None, library

    def site_of_traceback(self, tb: TracebackType | None) -> Site | None:
        """The innermost user frame of an exception's traceback."""
        found = None
        while tb is not None:
            filename = tb.tb_frame.f_code.co_filename
            if self.is_user(filename):
                found = Site(filename, tb.tb_lineno, tb.tb_frame.f_code.co_name, True)
            tb = tb.tb_next
        return found


def is_tpulint_frame(filename: str) -> bool:
    """A frame of tpulint's runtime (its recorders and workarounds wrap torch calls)."""
    return os.path.realpath(filename).startswith(os.path.join(_RUNTIME_DIR, ""))


# Frames that only pass a call on: never the answer to "which library function did it".
_PLUMBING_FILES = (
    "/torch_xla/torch_xla.py",
    "/torch_xla/core/xla_model.py",
    "/typing_extensions.py",
    "/torch/_tensor.py",
    "/torch/overrides.py",
    "/torch/utils/_contextlib.py",
    "/torch/nn/modules/module.py",
    "/functools.py",
)


def is_plumbing(path: str) -> bool:
    norm = path.replace("\\", "/")
    return is_tpulint_frame(path) or norm.endswith(_PLUMBING_FILES)


def reader_of(frame: FrameType | None, code: CodeFilter) -> Site | None:
    """The library function that did a read (or called the op), the innermost frame that is
    neither plumbing nor tpulint's; None when that is the user's own line."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_plumbing(filename):
            if code.is_user(filename):
                return None
            return Site(filename, frame.f_lineno, frame.f_code.co_name, False)
        frame = frame.f_back
    return None


def entry_of(frame: FrameType | None, code: CodeFilter) -> Site | None:
    """The library function the user's innermost line called (torchmetrics' `accuracy`, for
    a `unique` deep inside it): the outermost frame that is neither plumbing nor tpulint's
    below the first user frame; None when the op is the user's own call."""
    entry: Site | None = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if code.is_user(filename):
            return entry
        if not is_plumbing(filename):
            entry = Site(filename, frame.f_lineno, frame.f_code.co_name, False)
        frame = frame.f_back
    return None


def _is_reportable_library(filename: str) -> bool:
    # torch's own Python layers (tensor methods, functional wrappers, overrides) and tpulint's
    # recorder are never the interesting caller; Lightning or torch_xla frames are.
    norm = filename.replace(os.sep, "/")
    if norm.startswith(_RUNTIME_DIR.replace(os.sep, "/")):
        return False
    return not ("/torch/" in norm and "/torch_xla/" not in norm)
