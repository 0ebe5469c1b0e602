"""`tpulint fix --prove TARGET --apply --unsafe-fixes`: apply the unsafe rewrites of a module's
files only where training the module shows them equivalent.

The module is trained once as written and once with every rewrite, from the same seed on the
same batches (verify --compare's equivalence check). When the two differ, the rewrites are
bisected: halves are tried on top of those already proven, and a half that breaks equivalence
is split until one rewrite is left, which is refused; the search goes on with the others until
the rest is proven together. Safe fixes are applied as `fix --apply` would. Fixes that change the
training by design (batch size, drop_last, precision) cannot be proven equal and are left out,
with the command that applies them. A rewrite that overlaps another, or appears only once others
are applied, is not tried in this run (run prove again).

Nothing here imports torch: each training runs in verify's child process.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.errors import VerifyError
from tpulint.runtime.judge.equivalence import (
    CHANGES_BY_DESIGN,
    Equivalence,
    executed_lines,
    judge,
    ran,
)
from tpulint.runtime.spec import TargetRef

from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Applicability, Diagnostic


@dataclass
class Rewrite:
    """One unsafe fix (the findings that share it: a loss over two selections is one
    rewrite)."""

    path: str  # as shown
    file: str  # absolute
    findings: list[Diagnostic]

    @property
    def first(self) -> Diagnostic:
        return self.findings[0]

    @property
    def keys(self) -> set[tuple[Any, ...]]:
        return {_key(d) for d in self.findings}

    def to_json(self) -> dict[str, Any]:
        first = self.first
        return {
            "path": self.path,
            "line": first.start.line,
            "code": first.code,
            "title": first.fix.message if first.fix else None,
            "findings": [
                {"line": d.start.line, "column": d.start.column, "code": d.code}
                for d in self.findings
            ],
        }

    def label(self) -> str:
        return f"{self.path}:{self.first.start.line} {self.first.code}"


def _key(diagnostic: Diagnostic) -> tuple[Any, ...]:
    return (
        diagnostic.code,
        diagnostic.start.line,
        diagnostic.start.column,
        diagnostic.end.line,
        diagnostic.end.column,
        diagnostic.message,
    )


@dataclass
class Trial:
    """One training run of a set of rewrites against the original."""

    rewrites: list[Rewrite]
    equivalence: Equivalence | None
    error: str | None
    seconds: float

    @property
    def equivalent(self) -> bool:
        return self.error is None and self.equivalence is not None and self.equivalence.equivalent

    def line(self) -> str:
        if self.error:
            return f"could not train it: {self.error}"
        if self.equivalence is None:
            return "no steps recorded"
        return self.equivalence.line()


@dataclass
class ProveReport:
    target: str
    applied: list[Rewrite] = field(default_factory=list)
    refused: list[tuple[Rewrite, str]] = field(default_factory=list)
    by_design: list[Rewrite] = field(default_factory=list)
    not_run: list[Rewrite] = field(default_factory=list)  # the training never runs their code
    deferred: list[Diagnostic] = field(default_factory=list)  # unsafe, not tried this run
    trials: list[tuple[str, Trial]] = field(default_factory=list)
    original_seconds: float = 0.0
    written: list[str] = field(default_factory=list)
    diffs: dict[str, str] = field(default_factory=dict)
    not_written: list[str] = field(default_factory=list)
    applied_fixes: int = 0  # findings fixed in the files (safe ones included)
    apply: bool = False
    error: str | None = None
    wall_seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        if self.error:
            return 2
        if self.refused or self.not_written:
            return 1
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "prove",
            "target": self.target,
            "error": self.error,
            "exit_code": self.exit_code,
            "applied": [r.to_json() for r in self.applied],
            "refused": [{**r.to_json(), "reason": reason} for r, reason in self.refused],
            "changes_by_design": [
                {**r.to_json(), "reason": CHANGES_BY_DESIGN.get(r.first.code)}
                for r in self.by_design
            ],
            "not_run": [r.to_json() for r in self.not_run],
            "not_tried": [
                {"path": d.path, "line": d.start.line, "code": d.code} for d in self.deferred
            ],
            "runs": [
                {
                    "label": label,
                    "rewrites": [r.label() for r in trial.rewrites],
                    "equivalence": trial.equivalence.to_json() if trial.equivalence else None,
                    "error": trial.error,
                    "seconds": round(trial.seconds, 2),
                }
                for label, trial in self.trials
            ],
            "written": self.written,
            "not_written": self.not_written,
            "wall_seconds": round(self.wall_seconds, 2),
        }

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), indent=2)

    def render(self) -> str:
        lines = [f"tpulint fix --prove {self.target}"]
        if self.error:
            return "\n".join([*lines, f"  could not prove: {self.error}", ""])
        lines.append(f"  trained as written ({self.original_seconds:.1f}s)")
        for label, trial in self.trials:
            lines.append(f"  {label}: {trial.line()} ({trial.seconds:.1f}s)")
        if self.applied:
            lines += ["", "Proven equivalent, applied:" if self.apply else "Proven equivalent:"]
            lines += [
                f"  {r.label()}: {r.first.fix.message if r.first.fix else ''}" for r in self.applied
            ]
        if self.refused:
            lines += ["", "Refused (the training differs with it):"]
            lines += [f"  {r.label()}: {reason}" for r, reason in self.refused]
        if self.by_design:
            codes = ",".join(sorted({r.first.code for r in self.by_design}))
            lines += [
                "",
                "Not applied: they change the training by design, so equivalence cannot prove them"
                f" (apply them with `tpulint fix --apply --unsafe-fixes --select {codes}`):",
            ]
            lines += [
                f"  {r.label()}: {CHANGES_BY_DESIGN.get(r.first.code, '')}" for r in self.by_design
            ]
        if self.not_run:
            lines += [
                "",
                "Not applied: training the module never runs them, so it cannot prove them"
                " (validation code, another class of the file):",
            ]
            lines += [f"  {r.label()}" for r in self.not_run]
        if self.deferred:
            lines += [
                "",
                "Not tried in this run (they overlap or follow other rewrites; run prove again):",
            ]
            lines += [f"  {d.path}:{d.start.line} {d.code}" for d in self.deferred]
        for problem in self.not_written:
            lines.append(f"tpulint: warning: {problem}")
        lines.append("")
        if self.apply:
            files = len(self.written)
            proven = len(self.applied)
            lines.append(
                f"Wrote {files} file{'s' if files != 1 else ''} ({self.applied_fixes} findings"
                f" fixed, {proven} proven rewrite{'s' if proven != 1 else ''});"
                f" {len(self.trials) + 1} training runs, {self.wall_seconds:.1f}s."
            )
        else:
            lines.append("".join(self.diffs.values()).rstrip("\n"))
            lines.append(
                f"Would write {len(self.diffs)} file{'s' if len(self.diffs) != 1 else ''};"
                " run with --apply to write."
            )
        return "\n".join(lines) + "\n"


class _Prover:
    def __init__(
        self,
        target: str,
        files: list[str],
        configs: dict[str, Config],
        cwd: str,
        work: Path,
        options: dict[str, Any],
        datamodule: str | None,
    ) -> None:
        self.target = target
        self.files = files
        self.configs = configs
        self.cwd = cwd
        self.work = work
        self.options = options
        self.datamodule = datamodule
        self.sources = {path: Path(path).read_text(encoding="utf-8") for path in files}
        self.original_events: list[dict[str, Any]] = []
        self.trials = 0
        self._projects: dict[Path, Any] = {}
        self._baseline: list[dict[str, Any]] | None = None

    def project(self, path: str) -> Any:
        """The whole-project model `tpulint fix` would use for `path` (built once per project
        root): a helper in another module of the project is hot through its callers there, and
        value kinds come from the whole project, so prove finds the rewrites `fix` offers."""
        from tpulint.runner.paths import project_model

        config = self.configs[path]
        if config.root not in self._projects:
            same_root = [f for f in self.files if self.configs[f].root == config.root]
            self._projects[config.root] = project_model(same_root or [path], config)
        return self._projects[config.root]

    def shown(self, path: str) -> str:
        relative = os.path.relpath(path, self.cwd)
        return path if relative.startswith("..") else relative

    def rewrites(self) -> tuple[list[Rewrite], list[Rewrite]]:
        """(candidates, changes by design): the unsafe fixes of the files as they are."""
        from tpulint.engine.source import check_source

        candidates: list[Rewrite] = []
        by_design: list[Rewrite] = []
        for path in self.files:
            grouped: dict[tuple[Any, ...], Rewrite] = {}
            found = check_source(
                self.sources[path], path, self.configs[path], project=self.project(path)
            )
            for diagnostic in found:
                fix = diagnostic.fix
                if fix is None or fix.applicability is not Applicability.UNSAFE:
                    continue
                key = tuple(fix.edits) or (_key(diagnostic),)
                if key in grouped:
                    grouped[key].findings.append(diagnostic)
                    continue
                if fix.related and not self._current(fix):
                    continue  # another file changed since: `fix` would not apply it either
                rewrite = Rewrite(self.shown(path), path, [diagnostic])
                grouped[key] = rewrite
                (by_design if diagnostic.code in CHANGES_BY_DESIGN else candidates).append(rewrite)
        return candidates, by_design

    def _text(self, path: str) -> str | None:
        """A file's text: the target's files as read, other files of the project on first
        use (a callback or a metrics module that a rewrite spanning files edits)."""
        if path not in self.sources:
            try:
                self.sources[path] = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            if path not in self.configs:
                from tpulint.config.settings import ConfigError, load_config

                try:
                    self.configs[path] = load_config(start=Path(path).parent)
                except ConfigError:
                    self.configs[path] = Config()
        return self.sources[path]

    def _current(self, fix: Any) -> bool:
        """Whether every other file a fix edits still holds the text it was computed on."""
        from tpulint.runner.groups import sha1

        for other in fix.related:
            text = self._text(other.path)
            if text is None or sha1(text) != other.digest:
                return False
        return True

    def fixed_sources(self, rewrites: list[Rewrite]) -> dict[str, Any]:
        """path -> FixResult with the safe fixes and `rewrites` applied (files outside the
        target's that a chosen rewrite spanning files edits included)."""
        from tpulint.engine.source import fix_subset

        keys = set().union(*(r.keys for r in rewrites)) if rewrites else set()
        extra: dict[str, list[Any]] = {}
        for rewrite in rewrites:
            fix = rewrite.first.fix
            for other in fix.related if fix is not None else ():
                edits = extra.setdefault(os.path.realpath(other.path), [])
                edits.extend(e for e in other.edits if e not in edits)
                self._text(other.path)
        paths = list(self.files)
        known = {os.path.realpath(p) for p in paths}
        paths += [p for p in extra if p not in known]

        def accept(diagnostic: Diagnostic) -> bool:
            fix = diagnostic.fix
            if fix is not None and fix.applicability is Applicability.SAFE:
                return True
            return _key(diagnostic) in keys

        results = {}
        for path in paths:
            if self._text(path) is None:
                raise VerifyError(f"cannot read {self.shown(path)}, which a rewrite edits")
            result = fix_subset(
                self.sources[path],
                path,
                self.configs[path],
                accept,
                project=self.project(path),
                extra_edits=extra.get(os.path.realpath(path), ()),
            )
            if result.error:
                raise VerifyError(f"tpulint fix failed on {self.shown(path)}: {result.error}")
            results[path] = result
        return results

    def _verify(self, role: str, events: list[dict[str, Any]], **extra: Any) -> Any:
        from tpulint.runtime.api import verify

        record: dict[str, Any] = {"seed": 0, "dir": str(self.work / "equivalence"), "role": role}
        if role == "original":
            record["trace"] = self.files  # which lines the training runs
        return verify(
            self.target,
            datamodule=self.datamodule,
            cwd=self.cwd,
            _equivalence=record,
            _events=events,
            **extra,
            **self.options,
        )

    def exercised(self, rewrite: Rewrite) -> bool:
        """Whether training the module as written ran the rewrite's lines."""
        executed = executed_lines(self.original_events)
        return any(
            ran({"file": rewrite.file, "line": d.start.line, "end_line": d.end.line}, executed)
            for d in rewrite.findings
        )

    def train_original(self) -> float:
        started = time.perf_counter()
        report = self._verify("original", self.original_events)
        if report.error:
            raise VerifyError(f"the module as written does not train: {report.error}")
        return time.perf_counter() - started

    def trial(self, rewrites: list[Rewrite]) -> Trial:
        started = time.perf_counter()
        results = self.fixed_sources(rewrites)
        overrides, aliases = {}, {}
        self.trials += 1
        for index, (path, result) in enumerate(results.items()):
            if result.source == self.sources[path]:
                continue
            copy = self.work / f"trial-{self.trials}" / str(index) / os.path.basename(path)
            copy.parent.mkdir(parents=True)
            copy.write_text(result.source, encoding="utf-8")
            overrides[path] = str(copy)
            aliases[str(copy)] = f"{self.shown(path)} (rewritten)"
        events: list[dict[str, Any]] = []
        report = self._verify("fixed", events, _overrides=overrides, _aliases=aliases)
        if report.error:
            return Trial(rewrites, None, report.error, time.perf_counter() - started)
        precision = report.trainer.get("used", {}).get("precision") if report.trainer else None
        described = [
            {
                "path": r.path,
                "line": r.first.start.line,
                "code": r.first.code,
                "applicability": "unsafe",
            }
            for r in rewrites
        ]
        equivalence = judge(self.original_events, events, rewrites=described, precision=precision)
        if equivalence is not None and equivalence.needs_baseline:
            # A state value differs: does it differ between two runs as written too?
            equivalence = judge(
                self.original_events,
                events,
                rewrites=described,
                precision=precision,
                baseline=self.baseline(),
            )
        return Trial(rewrites, equivalence, None, time.perf_counter() - started)

    def baseline(self) -> list[dict[str, Any]]:
        """A second training of the module as written (once per prove)."""
        if self._baseline is None:
            events: list[dict[str, Any]] = []
            report = self._verify("baseline", events)
            self._baseline = events if not report.error else []
        return self._baseline


def prove(
    target: str,
    *,
    configs: dict[str, Config] | None = None,
    datamodule: str | None = None,
    apply: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    **options: Any,
) -> ProveReport:
    """Find the unsafe rewrites of `target`'s files that keep its training the same, and (with
    `apply`) write them with the safe fixes. `options` are verify's (cores, steps, ...)."""
    started = time.perf_counter()
    directory = os.path.abspath(cwd or os.getcwd())
    report = ProveReport(target, apply=apply)
    work = Path(tempfile.mkdtemp(prefix="tpulint-prove-"))
    try:
        try:
            from tpulint.runtime.api import _target_files

            from tpulint.config.settings import ConfigError, load_config

            refs = [TargetRef.parse(target, cwd=directory)]
            if datamodule:
                refs.append(TargetRef.parse(datamodule, cwd=directory))
            files = _target_files(refs, directory)
            chosen: dict[str, Config] = {}
            for path in files:
                if configs and path in configs:
                    chosen[path] = configs[path]
                    continue
                try:
                    chosen[path] = load_config(start=Path(path).parent)
                except ConfigError:
                    chosen[path] = Config()
            prover = _Prover(target, files, chosen, directory, work, options, datamodule)
            candidates, report.by_design = prover.rewrites()
            proven: list[Rewrite] = []
            if candidates:
                report.original_seconds = prover.train_original()
                report.not_run = [r for r in candidates if not prover.exercised(r)]
                candidates = [r for r in candidates if prover.exercised(r)]
            if candidates:
                proven = _search(prover, candidates, report)
            report.applied = proven
            results = prover.fixed_sources(proven)
        except VerifyError as exc:
            report.error = exc.message
            report.wall_seconds = time.perf_counter() - started
            return report
        everything = candidates + report.not_run
        tried = set().union(*(r.keys for r in everything)) if everything else set()
        by_design = set().union(*(r.keys for r in report.by_design)) if report.by_design else set()
        for path, result in results.items():
            report.applied_fixes += len(result.fixed)
            report.deferred += [
                d
                for d in result.remaining
                if d.fix is not None
                and d.fix.applicability is Applicability.UNSAFE
                and _key(d) not in tried | by_design
                and d.code not in CHANGES_BY_DESIGN
            ]
            original = prover.sources[path]
            if result.source == original:
                continue
            shown = prover.shown(path)
            if apply:
                from tpulint.runner.paths import write_if_unchanged

                problem = write_if_unchanged(Path(path), original, result.source)
                if problem:
                    report.not_written.append(f"{shown}: {problem}")
                else:
                    report.written.append(shown)
            else:
                import difflib

                report.diffs[shown] = "".join(
                    difflib.unified_diff(
                        original.splitlines(keepends=True),
                        result.source.splitlines(keepends=True),
                        f"a/{shown}",
                        f"b/{shown}",
                    )
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.wall_seconds = time.perf_counter() - started
    return report


def _search(prover: _Prover, candidates: list[Rewrite], report: ProveReport) -> list[Rewrite]:
    """The rewrites proven equivalent together; the refused ones go to the report."""
    good: list[Rewrite] = []
    remaining = list(candidates)
    first = True
    while remaining:
        trial = prover.trial(good + remaining)
        label = "all rewrites" if first else f"the other {len(remaining)} rewrite(s)"
        report.trials.append((label, trial))
        first = False
        if trial.equivalent:
            return good + remaining
        # A difference, or a rewrite that makes the module fail to train: find one culprit.
        culprit, reason, good = _bisect(prover, good, remaining, trial, report)
        report.refused.append((culprit, reason))
        kept = {id(r) for r in good}
        remaining = [r for r in remaining if r is not culprit and id(r) not in kept]
    return good


def _bisect(
    prover: _Prover,
    good: list[Rewrite],
    suspects: list[Rewrite],
    failing: Trial,
    report: ProveReport,
) -> tuple[Rewrite, str, list[Rewrite]]:
    """One rewrite of `suspects` that breaks equivalence on top of `good` (the last failing
    trial's line as the reason), and `good` grown by the halves proven on the way."""
    good = list(good)
    while len(suspects) > 1:
        half = suspects[: len(suspects) // 2]
        trial = prover.trial(good + half)
        report.trials.append((f"bisecting: {', '.join(r.label() for r in half)}", trial))
        if trial.equivalent:
            good += half
            suspects = suspects[len(half) :]
        else:
            suspects, failing = half, trial
    return suspects[0], _reason(failing), good


def _reason(trial: Trial) -> str:
    """What went wrong with a rewrite in, without the judge's guess at which one."""
    if trial.error:
        return f"the module no longer trains: {trial.error}"
    equivalence = trial.equivalence
    if equivalence is None:
        return "the rewritten module recorded no steps"
    if equivalence.first_difference is not None:
        equivalence.first_difference.rewrite = None
    return equivalence.line()
