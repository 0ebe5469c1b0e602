"""Which files each tool looks at in a folder. Runs in the PROJECT venv (it imports tpulint).

    python bench/select_files.py FOLDER OUT.json

Writes {"discovered": [...], "tpulint_parses": [...], "torchfix_parses": [...], "stats": {...}}:
- discovered: what `tpulint check FOLDER` walks (tpulint's own discovery, default config): the
  libcst floor parses every one of these (issue 18's floor: tpulint doing all its work against
  merely parsing every file it reads);
- tpulint_parses: the subset in which some enabled rule's text prefilter matches
  (`tpulint.engine.source.would_parse`; the project model's screens then rule out more, see
  `-v`): the old floor, kept as a second, labelled figure;
- torchfix_parses: the files with a line containing "torch" (TorchFix's pre-filter).
Paths are absolute, sorted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tpulint.config.settings import load_config
from tpulint.engine.source import would_parse
from tpulint.runner.discovery import discover, read_source


def _stats(texts: dict[str, str], subset: list[str]) -> dict[str, int]:
    return {
        "files": len(subset),
        "lines": sum(texts[p].count("\n") for p in subset),
        "bytes": sum(len(texts[p].encode("utf-8", "surrogatepass")) for p in subset),
    }


def select(folder: Path) -> dict[str, object]:
    config = load_config(start=folder)
    files, _problems = discover([str(folder)], config)
    texts: dict[str, str] = {}
    for source in files:
        text, problem = read_source(source)
        if text is not None and problem is None:
            texts[str(source.path)] = text
    discovered = sorted(texts)
    tpulint = [p for p in discovered if would_parse(texts[p], p, config)]
    torchfix = [p for p in discovered if "torch" in texts[p]]
    return {
        "folder": str(folder),
        "config_root": str(config.root),
        "discovered": discovered,
        "tpulint_parses": tpulint,
        "torchfix_parses": torchfix,
        "stats": {
            "discovered": _stats(texts, discovered),
            "tpulint_parses": _stats(texts, tpulint),
            "torchfix_parses": _stats(texts, torchfix),
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder, out = Path(argv[0]).resolve(), Path(argv[1])
    out.write_text(json.dumps(select(folder), indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
