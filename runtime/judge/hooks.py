"""Where the user's hook is, for an exception Lightning raised about it.

An exception raised inside Lightning or torch_xla has no line of the user's on its stack, yet
it is usually about something of the user's: a Lightning 1.x hook Lightning 2 refuses, a
loader that a hook returned. The hook's definition is found in the target's source files
(the module's class first), and the library line that raised is read from the traceback.
Parent process only; standard library only.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from tpulint.runtime.frames import is_tpulint_frame

# Lightning 1.x hooks Lightning 2 refuses (lightning/pytorch/trainer/configuration_validator.py
# raises NotImplementedError for each), and what replaces them.
LEGACY_HOOKS = {
    "training_epoch_end": "on_train_epoch_end",
    "validation_epoch_end": "on_validation_epoch_end",
    "test_epoch_end": "on_test_epoch_end",
}
_REMOVED = re.compile(r"Support for `(?P<hook>\w+)` has been removed in v2\.0\.0")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')

# Lightning functions that handle what a dataloader hook returned.
_LOADER_FUNCTIONS = (
    "_request_dataloader",
    "setup_data",
    "_process_dataloader",
    "process_dataloader",
    "_check_dataloader_iterable",
    "_update_dataloader",
    "_get_dataloader_init_args_and_kwargs",
    "_resolve_sampler",
    "_parse_num_batches",
)


@lru_cache(maxsize=32)
def _definitions(path: str) -> tuple[tuple[str, str, int], ...]:
    """(class, method, line) for every method defined in a class of `path`."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    except (OSError, SyntaxError, ValueError):
        return ()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.append((node.name, item.name, item.lineno))
    return tuple(found)


def hook_site(events: list[dict[str, Any]], hook: str) -> dict[str, Any] | None:
    """The definition of `hook` in the target's files: in the target's class if it defines
    it, else in any class of those files (a base class, the DataModule)."""
    target = next((e for e in events if e["kind"] == "target"), None) or {}
    description = str(target.get("description") or "")
    candidates = []
    for path in target.get("files") or []:
        for cls, method, line in _definitions(path):
            if method == hook:
                mine = bool(re.search(rf"\b{re.escape(cls)}\b", description))
                candidates.append((not mine, path, line))
    if not candidates:
        return None
    _, path, line = min(candidates)
    return {"path": path, "line": line, "function": hook, "user": True}


def removed_hook(message: str) -> str | None:
    found = _REMOVED.search(message)
    return found["hook"] if found and found["hook"] in LEGACY_HOOKS else None


def library_line(traceback: str | None) -> dict[str, Any] | None:
    """The innermost frame of a traceback, when it is a library's (not tpulint's)."""
    frames = [m for m in map(_FRAME.match, (traceback or "").splitlines()) if m]
    for match in reversed(frames):
        if is_tpulint_frame(match["path"]):
            continue
        return {
            "path": match["path"],
            "line": int(match["line"]),
            "function": match["function"],
            "user": False,
        }
    return None


def loader_hook(traceback: str | None) -> str | None:
    """The dataloader hook whose result a failing Lightning function was handling."""
    frames = [m for m in map(_FRAME.match, (traceback or "").splitlines()) if m]
    if not any(m["function"] in _LOADER_FUNCTIONS for m in frames):
        return None
    text = " ".join(f"{m['path']} {m['function']}" for m in frames)
    if "test" in text and "evaluation_loop" in text:
        return "test_dataloader"
    if "evaluation_loop" in text or "val_dataloader" in text:
        return "val_dataloader"
    return "train_dataloader"
