""".gitignore matching (the subset of gitignore(5) that matters for choosing files to lint).

Supports comments, blank lines, `!` negation, trailing `/` (directories only), leading or
inner `/` (anchored to the .gitignore's folder), `*`, `?`, `[...]`, `**/`, `/**` and `/**/`.
Later patterns win over earlier ones, and deeper .gitignore files over shallower ones.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def _translate(glob: str) -> str:
    """gitignore glob -> regex over a '/'-separated relative path."""
    out = []
    i = 0
    n = len(glob)
    while i < n:
        ch = glob[i]
        if ch == "*":
            if glob[i : i + 2] == "**":
                # `**/` matches zero or more folders; a trailing `/**` everything inside.
                if glob[i + 2 : i + 3] == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = glob[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def parse_patterns(text: str) -> list[_Pattern]:
    patterns = []
    for raw in text.splitlines():
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        # Trailing spaces are ignored unless escaped.
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):
            line = line[1:]  # the negation mark, or the escaping backslash
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        regex = re.compile(_translate(line) + ("(?:/.*)?" if anchored else "") + r"\Z")
        patterns.append(_Pattern(regex, negate, dir_only, anchored))
    return patterns


class GitIgnore:
    """The .gitignore files that apply below a repository (or project) root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._by_dir: dict[Path, list[_Pattern]] = {}

    def _patterns_for(self, directory: Path) -> list[_Pattern]:
        cached = self._by_dir.get(directory)
        if cached is None:
            cached = []
            for name in (
                (".gitignore",) if directory != self.root else (".gitignore", ".git/info/exclude")
            ):
                with contextlib.suppress(OSError):
                    cached += parse_patterns(
                        (directory / name).read_text(encoding="utf-8", errors="replace")
                    )
            self._by_dir[directory] = cached
        return cached

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether `path` (absolute, under the root) is ignored. Parent folders are the
        caller's business: a walk does not descend into ignored folders."""
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return False
        parts = relative.parts
        result = False
        # Apply .gitignore files from the root down to the path's own folder.
        directory = self.root
        for depth in range(len(parts)):
            sub = "/".join(parts[depth:])
            name = parts[-1]
            for pattern in self._patterns_for(directory):
                if pattern.dir_only and not is_dir:
                    continue
                target = sub if pattern.anchored else name
                if pattern.regex.match(target):
                    result = not pattern.negate
            if depth < len(parts) - 1:
                directory = directory / parts[depth]
        return result


def find_repo_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None
