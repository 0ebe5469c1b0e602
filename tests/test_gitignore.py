"""`.gitignore` parity with git: generated trees with nested .gitignore files, negations, `**`,
anchored and folder-only patterns, character classes and escapes; every file and folder is
asked of the real `git check-ignore`, and tpulint's discovery must agree."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from tpulint.config.settings import Config
from tpulint.runner.discovery import GitIgnore, discover

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

NAMES = ["a", "b", "src", "lib", "tmp", "cache", "deep", "logs", "data", "keep", "x_1", "y_2"]
FILES = [
    "mod.py",
    "keep.py",
    "gen.gen.py",
    "keep.gen.py",
    "a_test.py",
    "b_test.py",
    "debug_1.py",
    "z.py",
    "#hash.py",
    "!bang.py",
    "with space.py",
    "trail.py",
    "notes.txt",
]
# Patterns spread over the root and nested .gitignore files: what real projects write, and
# the corners of gitignore(5).
PATTERNS = [
    "*.gen.py",
    "!keep.gen.py",
    "/z.py",
    "cache/",
    "!cache/",
    "**/tmp/**",
    "logs/**/debug_*.py",
    "a/**/b",
    "src/*.py",
    "[ab]_test.py",
    "[!a]_test.py",
    "?.py",
    "\\#hash.py",
    "\\!bang.py",
    "with space.py",
    "trail.py   ",
    "deep/",
    "/deep",
    "**/keep",
    "data/*",
    "!data/keep/",
    "x_*/",
    "!x_1/",
    "lib/**/",
    "*.py",
    "!mod.py",
    "# a comment",
    "",
    "**/y_2/mod.py",
    "keep/**/*.py",
    "!**/keep/keep.py",
    "b/",
    "/a/b/",
]


def _generate(root: Path, seed: int) -> None:
    rng = random.Random(seed)
    folders = [root]
    for _ in range(14):
        parent = rng.choice(folders)
        if len(parent.relative_to(root).parts) >= 4:
            continue
        folder = parent / rng.choice(NAMES)
        folder.mkdir(exist_ok=True)
        if folder not in folders:
            folders.append(folder)
    for folder in folders:
        for name in rng.sample(FILES, rng.randint(2, 6)):
            (folder / name).write_text("x = 1\n", encoding="utf-8")
        if folder == root or rng.random() < 0.5:
            lines = rng.sample(PATTERNS, rng.randint(2, 7))
            (folder / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")
    info = root / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "exclude").write_text("\n".join(rng.sample(PATTERNS, 2)) + "\n", encoding="utf-8")


SEEDS = 60


def _git_env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(root),  # no global excludes file
        "XDG_CONFIG_HOME": str(root / ".xdg"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def _git_ignored(root: Path, paths: list[str]) -> set[str]:
    """The paths `git check-ignore` reports as ignored."""
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=root,
        input="\n".join(paths) + "\n",
        capture_output=True,
        text=True,
        env=_git_env(root),
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return {line for line in result.stdout.splitlines() if line}


def _all_paths(root: Path) -> tuple[list[str], list[str]]:
    files, folders = [], []
    for current, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        base = Path(current).relative_to(root)
        for d in dirs:
            folders.append((base / d).as_posix() + "/")
        for name in names:
            if name != ".gitignore":
                files.append((base / name).as_posix())
    return sorted(files), sorted(folders)


def _git_walk(root: Path) -> set[str]:
    """The files git's own walk keeps (untracked and not ignored)."""
    result = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        text=True,
        env=_git_env(root),
        check=True,
    )
    return {p for p in result.stdout.split("\0") if p}


@pytest.mark.parametrize("seed", range(SEEDS))
def test_discovery_agrees_with_git(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    _generate(root, seed)
    files, folders = _all_paths(root)
    ignored = _git_ignored(root, files)
    kept_by_walk = _git_walk(root)
    # git agrees with itself on files (check-ignore looks at their folders too).
    assert {f for f in files if f not in ignored} == kept_by_walk - {
        f for f in kept_by_walk if f.endswith(".gitignore")
    }

    # Each file as a walk meets it: its folders first, then the file.
    matcher = GitIgnore(root)

    def ours(relative: str) -> bool:
        parts = relative.split("/")
        return any(
            matcher.ignored(root.joinpath(*parts[:depth]), depth < len(parts))
            for depth in range(1, len(parts) + 1)
        )

    disagreements = {
        f: "git ignores" if f in ignored else "git keeps"
        for f in files
        if ours(f) != (f in ignored)
    }
    assert not disagreements

    # And discovery: exactly the .py files git does not ignore.
    config = Config(root=root, exclude=(), respect_gitignore=True)
    found, problems = discover(["."], config, cwd=root)
    assert not problems
    expected = sorted(p for p in files if p.endswith(".py") and p not in ignored)
    assert sorted(s.display for s in found) == expected
    assert len(files) >= 30 and len(folders) >= 5  # the tree is big enough to mean something
