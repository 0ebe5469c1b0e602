"""Held-out precision reads: run tpulint on a frozen batch of repositories, split the findings
into numbered lists for readers, and score the readers' labels (bench/heldout-reader.md says
how a reader labels). A batch is a folder with `repos/<name>/` (each checked as its own
project, default rules and scope); results go next to it. A frozen copy has no `.git`, while
the user's checkout does, and tpulint reads `.git` as the mark of a repository's root (which
scripts and packages form one project): `run` gives each repository lacking one an empty
`git init`, so the batch is checked as its users check it.

    python bench/heldout.py run BATCH NAME [--tpulint EXE] [--args "--preview --select TPU006"]
                                                             # BATCH/runs/NAME.json
    python bench/heldout.py parts BATCH NAME PART=repo1,repo2:sub/dir ...
                                                             # BATCH/findings-PART.md, index.json

A part's `repo:prefix` takes that repository's findings under one folder (a large repository
split between readers); a bare `repo` takes its findings no earlier part took.
    python bench/heldout.py score BATCH [-v]                 # labels-*.md against index.json
    python bench/heldout.py rescore BATCH NAME               # a later run against the labels
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

_LABEL = re.compile(r"\s*#(\d+)\s*\|\s*(right|wrong|not-tpu)\s*\|\s*(.*)")


def run(batch: Path, name: str, exe: str, extra: list[str] | None = None) -> None:
    """Check every repository of the batch as its own project; write runs/NAME.json."""
    if Path(exe).exists():
        exe = str(Path(exe).resolve())  # each repository is its own working folder
    found: list[dict[str, Any]] = []
    for repo in sorted(p for p in (batch / "repos").iterdir() if p.is_dir()):
        if not (repo / ".git").exists():
            subprocess.run(["git", "init", "-q", str(repo)], check=True)
        out = subprocess.run(
            [
                exe,
                "check",
                ".",
                "--output-format",
                "json",
                "--exit-zero",
                "--no-cache",
                *(extra or []),
            ],
            cwd=repo,
            capture_output=True,
            text=True,
        )
        try:
            report = json.loads(out.stdout)
        except ValueError:
            print(f"{repo.name}: failed: {out.stderr.strip()[-300:]}")
            continue
        for diagnostic in report["diagnostics"]:
            found.append({**diagnostic, "repo": repo.name})
        summary = report["summary"]
        print(f"{repo.name}: {summary['findings']} (outside the scope {summary['outside_scope']})")
    (batch / "runs").mkdir(exist_ok=True)
    (batch / "runs" / f"{name}.json").write_text(json.dumps(found, indent=1))
    print(f"total {len(found)}")


def parts(batch: Path, name: str, specs: list[str]) -> None:
    """Numbered findings lists, one per reader (PART=repo,repo), and the index they share."""
    found = json.loads((batch / "runs" / f"{name}.json").read_text())
    index: list[dict[str, Any]] = []
    taken: set[int] = set()
    for spec in specs:
        part, repos = spec.split("=", 1)
        lines = [f"# findings {part} (run {name}, default rules and scope)", ""]
        for entry in repos.split(","):
            repo, _, prefix = entry.partition(":")
            items = sorted(
                (
                    d
                    for d in found
                    if d["repo"] == repo and id(d) not in taken and d["path"].startswith(prefix)
                ),
                key=lambda d: (d["path"], d["start"]["line"], d["start"]["column"]),
            )
            taken.update(id(d) for d in items)
            lines.append(f"## {entry} ({len(items)} findings)")
            for d in items:
                index.append({"n": len(index) + 1, "part": part, **d})
                where = f"{repo}/{d['path']}:{d['start']['line']}:{d['start']['column']}"
                lines.append(f"#{len(index)} {where} {d['code']} {d['message']}")
                for r in d.get("related") or []:
                    lines.append(f"    related: {r['path']}:{r['start']['line']} {r['message']}")
            lines.append("")
        (batch / f"findings-{part}.md").write_text("\n".join(lines))
    (batch / "index.json").write_text(json.dumps(index, indent=1))
    print(f"{len(index)} findings")


def _labels(batch: Path) -> tuple[dict[int, tuple[str, str]], list[str]]:
    labels: dict[int, tuple[str, str]] = {}
    misses: list[str] = []
    for path in sorted(batch.glob("labels-*.md")):
        in_misses = False
        for line in path.read_text().splitlines():
            if line.strip().lower().startswith("## misses"):
                in_misses = True
            elif in_misses and line.strip().startswith("- "):
                misses.append(line.strip()[2:])
            elif not in_misses and (m := _LABEL.match(line)):
                labels[int(m.group(1))] = (m.group(2), m.group(3))
    return labels, misses


def _figures(counts: collections.Counter[str]) -> str:
    right, wrong, off = counts["right"], counts["wrong"], counts["not-tpu"]
    total = right + wrong + off
    precision = f"{right / (right + wrong):.1%}" if right + wrong else "-"
    share = f"{off / total:.1%}" if total else "-"
    return f"{total:4d}  {right}/{wrong}/{off}  precision {precision}  not-TPU {share}"


def score(batch: Path, verbose: bool) -> None:
    """Totals, per repository and per rule; -v lists the wrong, not-TPU and missed."""
    index = {d["n"]: d for d in json.loads((batch / "index.json").read_text())}
    labels, misses = _labels(batch)
    unlabelled = sorted(set(index) - set(labels))
    print(f"total {_figures(collections.Counter(lab for lab, _ in labels.values()))}")
    print(f"misses {len(misses)}; unlabelled {unlabelled[:20]}")
    for title, key in (("repository", "repo"), ("rule", "code")):
        tally: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for n, (label, _) in labels.items():
            tally[index[n][key]][label] += 1
        print(f"-- per {title}")
        for k, counts in sorted(tally.items(), key=lambda kv: -sum(kv[1].values())):
            print(f"  {k:24s} {_figures(counts)}")
    if verbose:
        for wanted in ("wrong", "not-tpu"):
            print(f"== {wanted}")
            for n, (label, why) in sorted(labels.items()):
                if label == wanted:
                    d = index[n]
                    print(f"  #{n} {d['repo']}/{d['path']}:{d['start']['line']} {d['code']}: {why}")
        print("== misses")
        for miss in misses:
            print(f"  {miss}")


def rescore(batch: Path, name: str) -> None:
    """A later run against the labels (matched by repository, file, line and rule): what the
    labelled findings are now, which went, and the new ones to read."""
    index = json.loads((batch / "index.json").read_text())
    labels, _ = _labels(batch)

    def key(d: dict[str, Any]) -> tuple[str, str, int, str]:
        return d["repo"], d["path"], d["start"]["line"], d["code"]

    labelled = {key(d): labels.get(d["n"], ("?", ""))[0] for d in index}
    found = json.loads((batch / "runs" / f"{name}.json").read_text())
    now = collections.Counter(labelled[key(d)] for d in found if key(d) in labelled)
    seen = {key(d) for d in found}
    gone = collections.Counter(v for k, v in labelled.items() if k not in seen)
    new = [d for d in found if key(d) not in labelled]
    print(f"{name}: {_figures(now)}; gone {dict(gone)}; new {len(new)}")
    for d in new:
        where = f"{d['repo']}/{d['path']}:{d['start']['line']}"
        print(f"  new {where} {d['code']} {d['message'][:140]}")
    for k, label in labelled.items():
        if label == "right" and k not in seen:
            print(f"  LOST (labelled right) {k}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    p.add_argument("batch", type=Path)
    p.add_argument("name")
    p.add_argument("--tpulint", default=str(Path(sys.executable).with_name("tpulint")))
    p.add_argument("--args", default="", help="more tpulint arguments, one string")
    p = sub.add_parser("parts")
    p.add_argument("batch", type=Path)
    p.add_argument("name")
    p.add_argument("specs", nargs="+", metavar="PART=repo,repo")
    p = sub.add_parser("score")
    p.add_argument("batch", type=Path)
    p.add_argument("-v", action="store_true")
    p = sub.add_parser("rescore")
    p.add_argument("batch", type=Path)
    p.add_argument("name")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.batch, args.name, args.tpulint, args.args.split())
    elif args.command == "parts":
        parts(args.batch, args.name, args.specs)
    elif args.command == "score":
        score(args.batch, args.v)
    else:
        rescore(args.batch, args.name)


if __name__ == "__main__":
    main()
