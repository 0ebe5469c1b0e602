"""Peak memory of tpulint: the whole corpus, and single large files.

    python bench/memory.py [--corpus PATH] [--sizes 1,5] [--out FILE] [--tpulint PATH]

Run it with the project's Python. It measures, with `measure.run_measured` (RSS of the whole
process tree summed, sampled every 20 ms; PSS too):

- `tpulint check --no-cache` on a scratch copy of the corpus's `pkgs/` (2 workers here);
- for each size in `--sizes` (MB): `tpulint check --no-cache` and `tpulint fix --no-cache`
  (diff mode, writes nothing) on one file of that size, of two kinds: "corpus", corpus files
  concatenated (sorted by path, skipping files with `from __future__` imports, which are only
  valid at the top) until the size is reached; "dense", the TPU-unready example module
  (examples/tpu_unready/model.py) repeated, a finding every 370 bytes. The file is parsed
  and analysed in full: `--max-file-size` is raised above it.

The results are printed as a table and, with `--out`, written as JSON. The figures in
bench/README.md ("Memory") come from this script.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import run_measured

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent


def build_large_file(pkgs: Path, size: int, target: Path) -> int:
    """Concatenate corpus files (sorted by path) into `target` until it holds `size` bytes
    of valid Python; returns the number of files used."""
    used = 0
    written = 0
    with target.open("w", encoding="utf-8") as out:
        for path in sorted(pkgs.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "__future__" in text or "\t" in text or "\x0c" in text:
                continue
            try:
                compile(text, str(path), "exec", dont_inherit=True, flags=0x400)  # ONLY_AST
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if not text.endswith("\n"):
                text += "\n"
            out.write(text)
            written += len(text.encode("utf-8"))
            used += 1
            if written >= size:
                break
    return used


def build_dense_file(size: int, target: Path) -> int:
    """The TPU-unready example module repeated until `size` bytes; returns the copies."""
    module = (REPO / "examples" / "tpu_unready" / "model.py").read_text(encoding="utf-8")
    copies = size // len(module.encode("utf-8")) + 1
    target.write_text(module * copies, encoding="utf-8")
    return copies


def supports(tpulint: str, option: str) -> bool:
    result = subprocess.run([tpulint, "check", "--help"], capture_output=True, text=True)
    return option in result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        default=Path("/work/corpus"),
        help="folder holding the corpus's pkgs/ [default: /work/corpus]",
    )
    parser.add_argument("--sizes", default="1,5", help="large-file sizes in MB [default: 1,5]")
    parser.add_argument(
        "--tpulint",
        default=str(Path(sys.executable).parent / "tpulint"),
        help="the tpulint executable [default: next to this Python]",
    )
    parser.add_argument("--jobs", type=int, default=2, help="workers for the corpus run")
    parser.add_argument(
        "--kinds", default="corpus,dense", help="large-file kinds: corpus, dense [default: both]"
    )
    parser.add_argument("--skip-corpus", action="store_true")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    pkgs = args.corpus / "pkgs"
    if not pkgs.is_dir():
        parser.error(f"no pkgs/ folder under {args.corpus}")
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    raise_limit = supports(args.tpulint, "--max-file-size")
    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="tpulint-memory-") as tmp:
        scratch = Path(tmp)
        (scratch / "pyproject.toml").write_text("", encoding="utf-8")
        logs = scratch / "logs"
        if not args.skip_corpus:
            shutil.copytree(pkgs, scratch / "pkgs")
            argv_ = [
                args.tpulint,
                "check",
                "--no-cache",
                "--exit-zero",
                "-q",
                "-j",
                str(args.jobs),
                "pkgs",
            ]
            m = run_measured(argv_, cwd=scratch, log_dir=logs, name="corpus")
            results.append(
                {
                    "what": f"check corpus ({args.jobs} workers)",
                    "bytes": None,
                    "wall": m.wall,
                    "rss_mib": m.peak_rss_mib,
                    "pss_mib": m.peak_pss_mib,
                    "rc": m.returncode,
                }
            )
            shutil.rmtree(scratch / "pkgs")
        for kind in args.kinds.split(","):
            for size_mb in sizes:
                size = int(size_mb * 1_000_000)
                big = scratch / f"{kind}_{size_mb:g}mb.py"
                if kind == "dense":
                    count = build_dense_file(size, big)
                    label = f"{count} copies of the unready example"
                else:
                    count = build_large_file(pkgs, size, big)
                    label = f"{count} corpus files concatenated"
                actual = big.stat().st_size
                extra = ["--max-file-size", str(actual + 1)] if raise_limit else []
                for command in ("check", "fix"):
                    argv_ = [args.tpulint, command, "--no-cache", "--exit-zero", "-q"]
                    argv_ += [*extra, big.name]
                    name = f"{command}-{kind}-{size_mb:g}mb"
                    m = run_measured(argv_, cwd=scratch, log_dir=logs, name=name)
                    results.append(
                        {
                            "what": f"{command} one {size_mb:g} MB file ({label})",
                            "bytes": actual,
                            "wall": m.wall,
                            "rss_mib": m.peak_rss_mib,
                            "pss_mib": m.peak_pss_mib,
                            "rc": m.returncode,
                        }
                    )
                    if m.returncode not in (0, 1):
                        print(
                            f"{name} exited {m.returncode}: {m.stderr_tail[-400:]}", file=sys.stderr
                        )
    print(f"{'command':<68} {'wall s':>8} {'peak RSS MiB':>13} {'peak PSS MiB':>13}")
    for row in results:
        print(
            f"{row['what']:<68} {row['wall']:>8.1f} {row['rss_mib']:>13.0f} {row['pss_mib']:>13.0f}"
        )
    if args.out:
        args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
