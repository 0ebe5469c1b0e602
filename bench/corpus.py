"""The public corpus: fetching it when absent, and the scratch copy every tool runs on.

The tools never run on the fetched corpus itself: the benchmark copies its `pkgs/` tree into a
scratch folder OUTSIDE the repository (a folder inside it would inherit the repository's
pyproject.toml and .gitignore, and `bench/.cache/` is git-ignored, so gitignore-aware walkers
would skip everything). The scratch root gets an empty pyproject.toml so that every tool sees
the same project root: tpulint's configuration root (and cache folder), trailrunner's (Fixit's)
project root for .gitignore lookup. The corpus has no .gitignore or pyproject.toml files of its
own (fetch.sh keeps only .py files).

The "one file changed" measurement edits one file of the scratch copy and restores it after.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SCRATCH_MARKER = "# Scratch copy of the benchmark corpus (bench/run.py); safe to delete.\n"
EDIT_LINE = "\n_TPULINT_BENCH_EDIT = {n}\n"


class CorpusError(Exception):
    """The corpus could not be found or fetched."""


def count_py(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.py")) if folder.is_dir() else 0


def ensure_corpus(corpus: Path, fetch_script: Path, log: Path) -> Path:
    """`corpus/pkgs`, fetching it with `fetch_script` into `corpus` first if it is absent."""
    pkgs = corpus / "pkgs"
    if count_py(pkgs) > 0:
        return pkgs
    if not fetch_script.is_file():
        raise CorpusError(f"no corpus at {pkgs} and no fetch script at {fetch_script}")
    corpus.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        subprocess.run(["bash", str(fetch_script), str(corpus)], check=True, stdout=out, stderr=out)
    if count_py(pkgs) == 0:
        raise CorpusError(f"{fetch_script} ran but {pkgs} holds no .py files (see {log})")
    return pkgs


def make_scratch(pkgs: Path, scratch: Path) -> Path:
    """A fresh copy of `pkgs` at `scratch/pkgs`, with the root marker; returns scratch/pkgs."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    (scratch / "pyproject.toml").write_text(SCRATCH_MARKER, encoding="utf-8")
    target = scratch / "pkgs"
    shutil.copytree(pkgs, target, symlinks=True)
    return target


def warm_page_cache(files: list[str]) -> None:
    """Read every file once so that no tool pays for the first read from disk."""
    for path in files:
        with open(path, "rb") as handle:
            handle.read()


class FileEdit:
    """Append a module-level assignment to one file and put the file back afterwards.

    A new module-level name leaves the file's classes and imports, hence tpulint's project
    class table, unchanged: only the edited file has to be re-analysed."""

    def __init__(self, path: Path, n: int) -> None:
        self.path = path
        self.n = n
        self.original = path.read_bytes()

    def __enter__(self) -> FileEdit:
        self.path.write_bytes(self.original + EDIT_LINE.format(n=self.n).encode())
        return self

    def __exit__(self, *exc: object) -> None:
        self.path.write_bytes(self.original)
