"""The globs of `exclude`, `extend-exclude` and `per-file-ignores`, matched as git matches
`.gitignore` patterns (pathspec), against paths relative to the project root:

- a pattern without a `/` (a trailing one aside) matches a file or folder name at any depth:
  `build`, `*_pb2.py`, `conftest.py`, `legacy/`;
- a pattern with one matches the path from the project root: `tests/fixtures`, `src/*.py`,
  `/setup.py`;
- `*`, `?` and `[...]` match within one name, `**` any number of folders (none included):
  `**/conftest.py`, `tests/**/data`;
- a trailing `/` matches folders only, and a pattern that matches a folder matches
  everything in it (`tests/*` covers `tests/unit/test_model.py`).

`!` and `#` at the start of a pattern are plain characters (a glob is not a line of a
`.gitignore` file, where they negate and comment). Patterns that are plain names (`.venv`,
`build`: the default excludes) are compared as strings, so a run with no other pattern does
not import pathspec.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import cache
from typing import Any

# Characters that make a pattern more than a plain name.
_GLOB_CHARACTERS = frozenset("*?[]/\\!#")
# The regex group with which pathspec's gitignore patterns mark a match of a parent folder.
_FOLDER_MARK = "ps_d"


class Globs:
    """A set of patterns, compiled once."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.names: frozenset[str] = frozenset()
        # (compiled pattern, whether it matches folders only)
        self.patterns: list[tuple[Any, bool]] = []
        names = []
        for pattern in patterns:
            pattern = pattern.replace(os.sep, "/")
            if not _GLOB_CHARACTERS & set(pattern):
                names.append(pattern)
            else:
                self.patterns.append(_compile(pattern))
        self.names = frozenset(names)

    def match(self, relpath: str, is_dir: bool = False, *, itself: bool = False) -> bool:
        """Whether `relpath` (relative to the project root) matches a pattern: the path
        itself or, unless `itself`, a folder it is in (what per-file ignores need; a walk
        has already decided on the folders above the path, as git does)."""
        relpath = relpath.replace(os.sep, "/")
        if self.names:
            parts = relpath.split("/")
            if any(part in self.names for part in (parts[-1:] if itself else parts)):
                return True
        for pattern, folders_only in self.patterns:
            if folders_only and not is_dir and itself:
                continue
            result = pattern.match_file(relpath)
            if result is None:
                continue
            through_folder = bool(result.match.groupdict().get(_FOLDER_MARK))
            if through_folder and not itself:
                return True
            if not through_folder and (is_dir or not folders_only):
                return True
        return False


def path_matches(relpath: str, pattern: str) -> bool:
    """Whether a path relative to the project root matches one pattern (itself, or through a
    folder it is in)."""
    return _one(pattern).match(relpath)


@cache
def _one(pattern: str) -> Globs:
    return Globs([pattern])


def _compile(pattern: str) -> tuple[Any, bool]:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    if pattern.startswith(("!", "#")):
        pattern = "\\" + pattern
    # `legacy/` is matched as `legacy`, and only against folders: pathspec would otherwise
    # take the trailing slash of a folder's own path for a parent folder's.
    folders_only = pattern.endswith("/") and len(pattern.rstrip("/")) > 0
    if folders_only:
        pattern = pattern.rstrip("/")
    return GitIgnoreSpecPattern(pattern), folders_only
