"""Deeply nested code: what running the engine on a large-stack thread costs and what it buys.

    python bench/deep_expressions.py [--corpus PATH] [--files N] [--runs 3]

Two measurements, in one process (ratios measured in the same run, as bench/ does):

1. Cost on ordinary code. The first N corpus files that some rule parses (sorted by path) are
   checked with the engine's inner function on the caller's thread (what tpulint did before),
   and through `check_source`, which runs each file on a thread with a 1 GiB stack and a raised
   recursion limit (tpulint.engine.deep_stack). CPU time of each pass; the passes alternate, and the
   ratio is taken per repetition.
2. What each way handles. Generated deep expressions (a 500- and a 2,900-term `a + b` chain, a
   2,900-level attribute chain, 3,000 and 6,000 implicitly concatenated strings, 10,000- and
   100,000-term `and` chains), each in a Lightning module, checked and fixed (a) on the main
   thread with Python's default recursion limit, in a subprocess because libcst's native
   parser can overflow the main thread's stack and kill the process, and (b) through
   `check_source`/`fix_source`. "(a)" is also what an iterative walk of tpulint's own would
   give: tpulint's walks are already iterative, and the recursion that fails is libcst's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

HEADER = (
    "import lightning as L\n\n\nclass M(L.LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        x = batch.cuda()\n        value = {expr}\n        return x.sum().item()\n"
)
CASES = {
    "500-term a + b chain": lambda: " + ".join(f"a{i}" for i in range(500)),
    "2,900-term a + b chain": lambda: " + ".join(f"a{i}" for i in range(2900)),
    "2,900-level attribute chain": lambda: "a" + ".b" * 2900,
    "3,000 concatenated strings": lambda: " ".join(f'"s{i}"' for i in range(3000)),
    "6,000 concatenated strings": lambda: " ".join(f'"s{i}"' for i in range(6000)),
    "10,000-term and chain": lambda: " and ".join(f"a{i}" for i in range(10_000)),
    "100,000-term and chain": lambda: " and ".join(f"a{i}" for i in range(100_000)),
}

_CHILD = """
import sys, time
sys.path.insert(0, {repo!r})
from tpulint.config.settings import Config
from tpulint.engine.source import _check_source, _fix_source, check_source, fix_source
source = sys.stdin.read()
config = Config()
start = time.perf_counter()
try:
    if {direct!r}:
        found = _check_source(source, "deep.py", config, None, True)
        fixed = _fix_source(source, "deep.py", config, False, None)
    else:
        found = check_source(source, "deep.py", config)
        fixed = fix_source(source, "deep.py", config)
    codes = sorted({{d.code for d in found}})
    print("ok", ",".join(codes), len(fixed.fixed), f"{{time.perf_counter() - start:.2f}}")
except RecursionError:
    print("RecursionError")
"""


def outcome(source: str, direct: bool) -> str:
    code = _CHILD.format(repo=str(REPO), direct=direct)
    result = subprocess.run(
        [sys.executable, "-c", code], input=source, capture_output=True, text=True
    )
    if result.returncode < 0:
        return f"process killed by signal {-result.returncode} (stack overflow)"
    words = result.stdout.split()
    if not words:
        return f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1:]}"
    if words[0] != "ok":
        return "RecursionError: the run stops"
    codes, fixes, seconds = words[1], words[2], words[3]
    return f"findings {codes}; {fixes} fix(es) applied; {seconds} s"


def corpus_files(pkgs: Path, count: int) -> list[tuple[str, str]]:
    from tpulint.config.settings import Config
    from tpulint.engine.source import would_parse

    config = Config()
    out = []
    for path in sorted(pkgs.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if would_parse(text, str(path), config):
            out.append((str(path), text))
            if len(out) >= count:
                break
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/corpus"))
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    from tpulint.config.settings import Config
    from tpulint.engine.source import _check_source, check_source

    files = corpus_files(args.corpus / "pkgs", args.files)
    config = Config()
    lines = sum(text.count("\n") for _, text in files)
    ratios, direct_times, thread_times = [], [], []
    for run in range(args.runs):
        passes = ["direct", "thread"] if run % 2 == 0 else ["thread", "direct"]
        times = {}
        for kind in passes:
            start = time.process_time()
            for path, text in files:
                if kind == "direct":
                    _check_source(text, path, config, None, True)
                else:
                    check_source(text, path, config)
            times[kind] = time.process_time() - start
        direct_times.append(times["direct"])
        thread_times.append(times["thread"])
        ratios.append(times["thread"] / times["direct"])
    print(
        f"Ordinary code: {len(files)} corpus files ({lines:,} lines) that rules parse, "
        f"{args.runs} runs"
    )
    print(f"  caller's thread:      {statistics.median(direct_times):.2f} s CPU (median)")
    print(f"  large-stack thread:   {statistics.median(thread_times):.2f} s CPU (median)")
    print(
        f"  ratio thread/direct:  {statistics.median(ratios):.3f} "
        f"(runs: {', '.join(f'{r:.3f}' for r in ratios)})"
    )
    print()
    print("Deep expressions (check, then fix, of one Lightning module holding the expression)")
    for name, make in CASES.items():
        source = HEADER.format(expr=make())
        print(f"  {name}")
        print(f"    main thread, default limit: {outcome(source, True)}")
        print(f"    large-stack thread:         {outcome(source, False)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
