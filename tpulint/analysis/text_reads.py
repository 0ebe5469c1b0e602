"""Files and folders the analysis reads besides the project's Python sources and YAML configs
(READMEs, shell scripts, text configs, repository markers), so that the runner's caches,
keyed on the sources, also follow them: a warm run must see a class a new shell script names.

A path noted here may be a file read, a file looked for (its absence counts too), or a folder
walked (adding or removing an entry changes the folder's modification time)."""

from __future__ import annotations

_NOTED: set[str] = set()


def note(path: str) -> str:
    """Record `path` as read (or looked for, or walked); returns it."""
    _NOTED.add(path)
    return path


def noted() -> frozenset[str]:
    """Every path noted since the last `reset`."""
    return frozenset(_NOTED)


def reset() -> None:
    """Forget what was noted (before a model is built anew)."""
    _NOTED.clear()
