"""Checking and fixing many files: discovery, reading, the project model, the cache,
and a process pool over the files that need work.

    check_paths(paths, config) -> RunResult
    fix_paths(paths, config, unsafe=False, apply=False) -> RunResult
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import sys
import tempfile
import tokenize
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.analysis.project import ProjectModel, table_digest
from tpulint.cache import ResultCache, ScanCache, cache_name, content_key
from tpulint.config import Config
from tpulint.diagnostics import Applicability, Diagnostic
from tpulint.discovery import SourcePath, decode_source, discover, read_source
from tpulint.engine import FixResult, InternalError, check_source, fix_source
from tpulint.project_build import build_project

Progress = Callable[[int, int], None]


@dataclass
class FileOutcome:
    path: str  # display path
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fix: FixResult | None = None
    original: str | None = None  # the source as read (fix mode)
    error: str | None = None  # internal error, or why a fix was not written
    written: bool = False


@dataclass
class RunResult:
    files: list[FileOutcome]
    checked: int = 0  # files looked at
    parsed: int = 0  # files that were not answered from the cache
    cache_hits: int = 0
    internal_errors: list[str] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        out = [d for f in self.files for d in f.diagnostics]
        out.sort(key=lambda d: d.sort_key)
        return out

    @property
    def fixed(self) -> list[Diagnostic]:
        return [d for f in self.files if f.fix and (f.written or not f.error) for d in f.fix.fixed]


# --- workers -------------------------------------------------------------------------------

_STATE: dict[str, Any] = {}


def _init_worker(config: Config, project: ProjectModel, pooled: bool = False) -> None:
    _STATE["config"] = config
    _STATE["project"] = project
    _STATE["collect"] = pooled
    if pooled:
        # libcst allocates millions of small objects per file, which makes Python's cyclic
        # garbage collector run often and, on each full collection, traverse the tree being
        # built (measured: 13% of a cold run). The engine leaves no reference cycles around a
        # file's tree (FileContext.release), so reference counting frees it; a worker freezes
        # what it inherited, turns the collector off, and collects the few small cycles that
        # remain (closures) every so many files.
        gc.freeze()
        gc.disable()
        _STATE["files_since_collect"] = 0


def _after_file() -> None:
    if _STATE.get("collect"):
        _STATE["files_since_collect"] += 1
        if _STATE["files_since_collect"] >= 100:
            gc.collect()
            _STATE["files_since_collect"] = 0


def _check_batch(
    batch: list[tuple[str, str, str]],
) -> list[tuple[str, list[Diagnostic] | None, str | None]]:
    """[(display path, abs path, text)] -> [(display path, diagnostics, internal error)]."""
    config, project = _STATE["config"], _STATE["project"]
    out = []
    for display, absolute, text in batch:
        try:
            diagnostics = [
                d.with_path(display) for d in check_source(text, absolute, config, project=project)
            ]
            out.append((display, diagnostics, None))
        except InternalError as exc:
            out.append((display, None, str(exc)))
        _after_file()
    return out


def _fix_batch(
    batch: list[tuple[str, str, str]], unsafe: bool
) -> list[tuple[str, FixResult | None, str | None]]:
    config, project = _STATE["config"], _STATE["project"]
    out = []
    for display, absolute, text in batch:
        try:
            result = fix_source(text, absolute, config, unsafe=unsafe, project=project)
            result.fixed = [d.with_path(display) for d in result.fixed]
            result.remaining = [d.with_path(display) for d in result.remaining]
            out.append((display, result, None))
        except InternalError as exc:
            out.append((display, None, str(exc)))
        _after_file()
    return out


def _batches(items: list[tuple[str, str, str]], jobs: int) -> list[list[tuple[str, str, str]]]:
    """Size-balanced batches, largest files first, many per worker so that the last batch
    to finish leaves the other workers idle only briefly."""
    items = sorted(items, key=lambda item: len(item[2]), reverse=True)
    count = max(1, min(len(items), jobs * 32))
    batches: list[list[tuple[str, str, str]]] = [[] for _ in range(count)]
    sizes = [0] * count
    for item in items:
        index = sizes.index(min(sizes))
        batches[index].append(item)
        sizes[index] += len(item[2]) + 200
    return [b for b in batches if b]


def _pool_context() -> Any:
    # fork starts workers in milliseconds and shares the loaded rules; elsewhere spawn.
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _run(
    items: list[tuple[str, str, str]],
    worker: Callable[..., list[Any]],
    extra: tuple[Any, ...],
    config: Config,
    project: ProjectModel,
    jobs: int,
    progress: Progress | None,
) -> Iterator[Any]:
    total = len(items)
    if jobs <= 1 or total < 4:
        _init_worker(config, project)
        for done, item in enumerate(items, start=1):
            yield from worker([item], *extra)
            if progress:
                progress(done, total)
        return
    done = 0
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=_pool_context(),
        initializer=_init_worker,
        initargs=(config, project, True),
    ) as pool:
        futures = [pool.submit(worker, batch, *extra) for batch in _batches(items, jobs)]
        for future in as_completed(futures):
            results = future.result()
            done += len(results)
            if progress:
                progress(done, total)
            yield from results


# --- the run -------------------------------------------------------------------------------


@dataclass
class _Prepared:
    sources: list[tuple[SourcePath, str]]  # readable files and their text
    outcomes: list[FileOutcome]  # files that could not be read, problems met walking
    project: ProjectModel
    results: ResultCache | None

    def key(self, source: SourcePath, text: str) -> str:
        """The result cache key of a file: its path and content, and the facts the project
        model gives its analysis (hot chains, what its calls return), so a file is checked
        again when another file changes what it knows."""
        digest = self.project.file_digest(str(source.path)) if self.results is not None else ""
        return content_key(source.display, f"{text}\0{digest}")


def _prepare(paths: Sequence[str], config: Config, use_cache: bool, jobs: int) -> _Prepared:
    files, problems = discover(paths, config)
    outcomes = [FileOutcome(d.path, [d]) for d in problems]
    sources: list[tuple[SourcePath, str]] = []
    for source in files:
        text, problem = read_source(source)
        if problem is not None:
            outcomes.append(FileOutcome(source.display, [problem]))
        else:
            assert text is not None
            sources.append((source, text))
    cache_dir = config.root / config.cache_dir
    scan_cache = ScanCache(cache_dir) if use_cache else None
    project = build_project([(s.path, text) for s, text in sources], config, scan_cache, jobs)
    if scan_cache:
        scan_cache.save()
    results = None
    if use_cache:
        digest = table_digest(project.lightning_table())
        results = ResultCache(cache_dir, cache_name(config.fingerprint(), digest))
    return _Prepared(sources, outcomes, project, results)


def check_paths(
    paths: Sequence[str],
    config: Config,
    *,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Check files and folders. Raises discovery.PathError for a missing path."""
    jobs = jobs or os.cpu_count() or 1
    prepared = _prepare(paths, config, use_cache, jobs)
    cache = prepared.results
    run = RunResult(files=list(prepared.outcomes))
    todo: list[tuple[str, str, str]] = []
    keys: dict[str, str] = {}
    for source, text in prepared.sources:
        key = prepared.key(source, text)
        cached = cache.get(key) if cache else None
        if cached is not None:
            run.files.append(FileOutcome(source.display, cached))
            continue
        keys[source.display] = key
        todo.append((source.display, str(source.path), text))
    run.checked = len(prepared.sources)
    run.cache_hits = run.checked - len(todo)
    run.parsed = len(todo)
    for display, diagnostics, error in _run(
        todo, _check_batch, (), config, prepared.project, jobs, progress
    ):
        if error is not None:
            run.internal_errors.append(f"{display}: {error}")
            run.files.append(FileOutcome(display, error=error))
            continue
        run.files.append(FileOutcome(display, diagnostics))
        if cache:
            cache.put(keys[display], diagnostics)
    if cache:
        cache.save()
    run.files.sort(key=lambda f: f.path)
    return run


def _needs_fix(diagnostics: list[Diagnostic], unsafe: bool) -> bool:
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    return any(d.fix is not None and d.fix.applicability in allowed for d in diagnostics)


def fix_paths(
    paths: Sequence[str],
    config: Config,
    *,
    unsafe: bool = False,
    apply: bool = False,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Fix files and folders; write the results only when `apply` is true.

    A file is written atomically, only if its fixed source parses (the engine guarantees
    it) and only if the file on disk still has the content that was read."""
    jobs = jobs or os.cpu_count() or 1
    prepared = _prepare(paths, config, use_cache, jobs)
    cache = prepared.results
    run = RunResult(files=list(prepared.outcomes))
    todo: list[tuple[str, str, str]] = []
    originals: dict[str, tuple[SourcePath, str]] = {}
    for source, text in prepared.sources:
        key = prepared.key(source, text)
        cached = cache.get(key) if cache else None
        if cached is not None and not _needs_fix(cached, unsafe):
            run.files.append(FileOutcome(source.display, cached))
            continue
        originals[source.display] = (source, text)
        todo.append((source.display, str(source.path), text))
    run.checked = len(prepared.sources)
    run.cache_hits = run.checked - len(todo)
    run.parsed = len(todo)
    for display, result, error in _run(
        todo, _fix_batch, (unsafe,), config, prepared.project, jobs, progress
    ):
        source, original = originals[display]
        if error is not None or result is None:
            run.internal_errors.append(f"{display}: {error}")
            run.files.append(FileOutcome(display, error=error))
            continue
        outcome = FileOutcome(display, result.remaining, result, original, result.error)
        if apply and result.changed and result.error is None:
            outcome.error = write_if_unchanged(source.path, original, result.source)
            outcome.written = outcome.error is None
        if cache and (outcome.written or not result.changed):
            new_text = result.source if outcome.written else original
            cache.put(prepared.key(source, new_text), result.remaining)
        run.files.append(outcome)
    if cache:
        cache.save()
    run.files.sort(key=lambda f: f.path)
    return run


def write_if_unchanged(path: Path, original: str, new: str) -> str | None:
    """Atomically replace `path` with `new` if it still holds `original`; else why not."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"not written: cannot re-read the file ({exc.strerror})"
    try:
        on_disk = decode_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        on_disk = None
    if on_disk != original:
        return "not written: the file changed on disk since tpulint read it"
    try:
        # Keep the file's encoding: a BOM stays, a PEP 263 coding cookie is honoured.
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    try:
        new_bytes = new.encode(encoding)
    except UnicodeEncodeError as exc:
        return f"not written: {exc.reason}"
    try:
        mode = path.stat().st_mode
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tpulint", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(new_bytes)
            os.chmod(tmp, mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    return None
