"""The floor: read and `libcst.parse_module` a list of files, nothing else.

    python bench/floor.py FILE_LIST.json KEY --jobs N

FILE_LIST.json is select_files.py's output and KEY the list in it to parse (normally
"tpulint_parses"). Needs only the standard library and libcst, so it runs in any venv (the
project's, to compare with tpulint; TorchFix's, to see what its older libcst costs).

Prints one JSON object: the seconds spent reading and parsing (timed inside the process,
after `import libcst`: interpreter start-up is measured separately by the harness), the
import time of libcst, the files parsed and the files libcst rejected. With --jobs N > 1 the
files go to a pool of N forked processes (tpulint's own pool: fork, largest files first), and
the time includes starting and joining the pool.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
import tokenize

IMPORT_START = time.perf_counter()
import libcst  # noqa: E402 - timed on purpose

IMPORT_SECONDS = time.perf_counter() - IMPORT_START


def parse_file(path: str) -> bool:
    """Read `path` (honouring a coding cookie, like tpulint) and parse it; False if libcst
    rejects it."""
    with tokenize.open(path) as handle:
        text = handle.read()
    try:
        libcst.parse_module(text)
    except Exception:
        return False
    return True


def _largest_first(paths: list[str]) -> list[str]:
    import os

    return sorted(paths, key=lambda p: os.path.getsize(p), reverse=True)


def run(paths: list[str], jobs: int) -> dict[str, object]:
    start = time.perf_counter()
    if jobs <= 1:
        results = [parse_file(p) for p in paths]
    else:
        context = multiprocessing.get_context("fork")
        with context.Pool(jobs) as pool:
            results = list(pool.imap_unordered(parse_file, _largest_first(paths), chunksize=4))
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "import_seconds": IMPORT_SECONDS,
        "files": len(paths),
        "rejected": results.count(False),
        "jobs": jobs,
        "libcst": _libcst_version(),
        "python": sys.version.split()[0],
    }


def _libcst_version() -> str:
    from importlib.metadata import version

    return version("libcst")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file_list")
    parser.add_argument("key")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    with open(args.file_list, encoding="utf-8") as handle:
        paths = json.load(handle)[args.key] if args.key != "-" else []
    print(json.dumps(run(paths, args.jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
