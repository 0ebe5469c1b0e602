"""Checking and fixing many files: discovery, reading, the project model, the cache,
and a process pool over the files that need work.

    check_paths(paths, config) -> RunResult
    fix_paths(paths, config, unsafe=False, apply=False) -> RunResult
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpulint.analysis.modules import table_digest
from tpulint.analysis.trainer_splats import trainer_splats
from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Applicability, Diagnostic, Edit
from tpulint.runner.cache import (
    FactsCache,
    ListingCache,
    ResultCache,
    ScanCache,
    cache_name,
    derived_key,
    text_digest,
)
from tpulint.runner.discovery import SourcePath, discover, display_path, read_source
from tpulint.runner.project_build import (
    checked_inputs,
    context_files,
    context_signature,
    model_of,
    read_context,
    tpu_configs,
)
from tpulint.runner.writing import write_if_unchanged

if TYPE_CHECKING:
    from tpulint.analysis.project import ProjectModel
    from tpulint.engine.source import FixResult

# The engine (libcst, the analysis, the rules) is imported only when some file is not answered
# from the cache: a warm run never loads it (`_load_engine`).

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
    libcst_parsed: int = 0  # of those, files some rule needed parsed with libcst
    cache_hits: int = 0
    internal_errors: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # files skipped unopened (FIFOs, ...)

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


def _init_worker(config: Config, project: ProjectModel | None, pooled: bool = False) -> None:
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


def _failure(exc: Exception) -> str:
    """An internal error's one-line description, with where it was raised."""
    from tpulint.engine.source import InternalError
    from tpulint.runner.pool import describe_exception

    if isinstance(exc, InternalError):
        return str(exc)
    return describe_exception(exc)


def _check_one(
    item: tuple[str, str, str],
) -> tuple[str, list[Diagnostic] | None, str | None, bool]:
    """(display path, abs path, text) -> (display path, diagnostics, internal error, whether
    libcst parsed the file)."""
    from tpulint.engine.source import check_source, libcst_parses

    config, project = _STATE["config"], _STATE["project"]
    display, absolute, text = item
    before = libcst_parses()
    try:
        diagnostics = [
            d.with_path(display) for d in check_source(text, absolute, config, project=project)
        ]
        out: tuple[str, list[Diagnostic] | None, str | None, bool] = (
            display,
            diagnostics,
            None,
            libcst_parses() > before,
        )
    except Exception as exc:  # one file's failure is reported; the run goes on
        out = (display, None, _failure(exc), libcst_parses() > before)
    _after_file()
    return out


def _fix_one(
    item: tuple[str, str, str], unsafe: bool
) -> tuple[str, FixResult | None, str | None, bool]:
    from tpulint.engine.source import fix_source, libcst_parses

    config, project = _STATE["config"], _STATE["project"]
    display, absolute, text = item
    before = libcst_parses()
    try:
        result = fix_source(text, absolute, config, unsafe=unsafe, project=project)
        result.fixed = [d.with_path(display) for d in result.fixed]
        result.remaining = [d.with_path(display) for d in result.remaining]
        out: tuple[str, FixResult | None, str | None, bool] = (
            display,
            result,
            None,
            libcst_parses() > before,
        )
    except Exception as exc:
        out = (display, None, _failure(exc), libcst_parses() > before)
    _after_file()
    return out


def _crashed_check(
    item: tuple[str, str, str], why: str
) -> tuple[str, list[Diagnostic], None, bool]:
    return item[0], [_crash_diagnostic(item[0], why)], None, True


def _crashed_fix(item: tuple[str, str, str], why: str) -> tuple[str, FixResult, None, bool]:
    from tpulint.engine.source import FixResult

    display, _, text = item
    return display, FixResult(text, [], [_crash_diagnostic(display, why)]), None, True


def _crash_diagnostic(display: str, why: str) -> Diagnostic:
    from tpulint.engine.source import unanalysable_diagnostic

    return unanalysable_diagnostic(
        display, f"analysing this file ended tpulint's worker process ({why})"
    )


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


def _run(
    items: list[tuple[str, str, str]],
    worker: Callable[..., Any],
    extra: tuple[Any, ...],
    on_crash: Callable[[tuple[str, str, str], str], Any],
    config: Config,
    project: ProjectModel | None,
    jobs: int,
    progress: Progress | None,
) -> Iterator[Any]:
    total = len(items)
    _join_engine_import()
    if jobs <= 1 or total < 4:
        _init_worker(config, project)
        for done, item in enumerate(items, start=1):
            yield worker(item, *extra)
            if progress:
                progress(done, total)
        return
    done = 0
    _load_engine()
    from tpulint.runner.pool import Pool  # imported here: a warm run starts no workers

    with Pool(jobs, _init_worker, (config, project, True)) as pool:
        for result in pool.map(worker, _batches(items, jobs), extra, on_crash):
            done += 1
            if progress:
                progress(done, total)
            yield result


def _load_engine() -> None:
    """Import the engine and every rule class once, before forking the workers, which share
    them (a serial run loads only the rules whose prefilter matches a file). When the import
    was started while the model's workers summarised the files, wait for it to end."""
    _join_engine_import()
    _import_engine()  # nothing left to do after the thread, or raises what it met


def _join_engine_import() -> None:
    """Wait for the engine's import started by `_import_engine_meanwhile`, if any: before
    any fork (a child forked while the thread holds an import lock could deadlock)."""
    thread = _ENGINE_IMPORT.pop("thread", None)
    if thread is not None:
        thread.join()


def _import_engine() -> None:
    from tpulint.config.registry import all_rules
    from tpulint.engine.source import check_source  # noqa: F401  (libcst, analysis)

    all_rules()


_ENGINE_IMPORT: dict[str, threading.Thread] = {}


def _import_engine_meanwhile() -> None:
    """Start importing the engine on a thread while the model's worker processes summarise
    the files (the parent mostly waits for them then): the import (libcst, every rule: over
    half a second) leaves the run's serial path. Started only after those workers are
    forked, and joined before the checking workers are (`_load_engine`): no fork happens
    while it may hold an import lock."""
    if "thread" in _ENGINE_IMPORT or "tpulint.engine.source" in sys.modules:
        return

    def run() -> None:
        with contextlib.suppress(BaseException):  # _load_engine imports again and raises
            _import_engine()

    thread = threading.Thread(target=run, name="tpulint-engine-import", daemon=True)
    _ENGINE_IMPORT["thread"] = thread
    thread.start()


# --- the run -------------------------------------------------------------------------------


@dataclass
class _Prepared:
    sources: list[tuple[SourcePath, str]]  # readable files and their text
    outcomes: list[FileOutcome]  # files that could not be read, problems met walking
    notices: list[str]
    config: Config
    checked: list[tuple[str, str]]  # the checked Python files: (absolute path, text)
    context: list[str]  # the files that give them context, read only to build the model
    configs: list[str]  # YAML files of the folders walked (what classes configs build)
    jobs: int
    use_cache: bool
    digests: dict[str, bytes]  # display path -> content hash (each file hashed once)
    results: ResultCache | None = None
    facts: dict[str, str] = field(default_factory=dict)  # path -> ProjectModel.file_digest
    # A digest of every file of the run and its context: the key under which results that
    # depend on other files (Diagnostic.project_dependent) are cached.
    project_key: str = ""
    project: ProjectModel | None = None
    # Files the project model could not summarise (an internal error each; see model()).
    model_failures: list[str] = field(default_factory=list)
    # The config sections the checked code spreads into a Trainer (analysis.trainer_splats).
    splats: tuple[tuple[tuple[str, ...], str], ...] = ()

    def model(self) -> ProjectModel:
        """The project model, built on first use (a run answered from the cache needs none)."""
        if self.project is None:
            cache_dir = self.config.root / self.config.cache_dir
            scans = ScanCache(cache_dir) if self.use_cache else None
            items = self.checked + read_context(self.context, self.config)
            configs = read_context(self.configs, self.config)
            _join_engine_import()  # one a previous run in this process started (server)
            meanwhile = _import_engine_meanwhile if self.jobs > 1 else None
            self.project = model_of(
                items, self.config, scans, self.jobs, configs=configs, meanwhile=meanwhile
            )
            self.project.trainer_splats = self.splats
            if scans:
                scans.save()
            cwd = Path.cwd().resolve()
            self.model_failures = [
                f"{display_path(Path(summary.path), cwd)}: the project model could not "
                f"summarise it ({summary.failure})"
                for summary in self.project.modules.values()
                if summary.failure is not None
            ]
        return self.project

    def key(self, source: SourcePath, digest: bytes) -> str:
        """The result cache key of a file: its path and content (`digest`), and the facts the
        project model gives its analysis (hot chains, what its calls return), so a file is
        checked again when another file changes what it knows."""
        facts = self.facts.get(str(source.path), "")
        return derived_key(source.display, digest + facts.encode())


_XRT_SETTING = re.compile(
    r"\b(XRT_TPU_CONFIG|TPU_IP_ADDRESS)=|-m\s+torch_xla\.distributed\.xla_dist"
)


def _sets_xrt(path: Path, config: Config) -> bool:
    """Whether a walked shell script may set the XRT runtime's environment (TPU008 checks
    it): a text screen, the rule reads the script's commands."""
    limit = config.max_file_size or 1 << 20
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(limit + 1)
    except OSError:
        return False
    return len(text) <= limit and _XRT_SETTING.search(text) is not None


def _with_inherited(path: str, text: str, splats: tuple[Any, ...] = ()) -> str:
    """A file's text, and for a Hydra config the configs it inherits through `defaults:`
    (engine.yaml_files, loaded only for YAML files that have such a list), and for a YAML
    file the Trainer spreads of the code (which sections are a Trainer's arguments)."""
    if not path.lower().endswith((".yaml", ".yml")):
        return text
    if "defaults" in text:
        from tpulint.engine.yaml_files import with_inherited

        text = with_inherited(path, text)
    return f"{text}\0splats:{sorted(splats)!r}" if splats else text


def _prepare(paths: Sequence[str], config: Config, use_cache: bool, jobs: int) -> _Prepared:
    notices: list[str] = []
    configs: list[Path] = []
    scripts: list[Path] = []
    files, problems = discover(paths, config, notices=notices, configs=configs, scripts=scripts)
    # The LightningCLI configs met on the walk that ask for a TPU Trainer, or leave the
    # accelerator to `auto` (the TPU on a TPU VM), are the project's TPU launch: checked as if
    # named (a `tpu_cores` key there fails the launch in Lightning 2).
    named = {source.path for source in files}
    cwd = Path.cwd().resolve()
    outcomes = [FileOutcome(d.path, [d]) for d in problems]
    sources: list[tuple[SourcePath, str]] = []

    def read(batch: list[SourcePath]) -> None:
        for source in batch:
            text, problem = read_source(source, config.max_file_size)
            if problem is not None:
                outcomes.append(FileOutcome(source.display, [problem]))
            else:
                assert text is not None
                sources.append((source, text))

    read(files)
    # `pl.Trainer(**cfg.trainer)` in the checked code: the YAML sections it spreads are
    # Trainer arguments (analysis.trainer_splats).
    splats = tuple(
        splat
        for source, text in sources
        if source.path.suffix == ".py"
        for splat in trainer_splats(text)
    )
    walked = [
        SourcePath(display_path(Path(path), cwd), Path(path))
        for path in tpu_configs([str(p) for p in configs if p not in named], config, splats)
    ]
    # Shell launchers met on the walk that set the retired XRT runtime's environment
    # (`export XRT_TPU_CONFIG=...`): checked as if named.
    walked += [
        SourcePath(display_path(path, cwd), path)
        for path in scripts
        if path not in named and _sets_xrt(path, config)
    ]
    files += walked
    read(walked)
    # Content hashes key the caches: without them nothing needs them.
    digests = (
        {s.display: text_digest(_with_inherited(str(s.path), text, splats)) for s, text in sources}
        if use_cache
        else {}
    )
    checked = checked_inputs([(s.path, text) for s, text in sources])
    covered = [path for path in paths if path != "-" and os.path.isdir(path)]
    listings = ListingCache(config.root / config.cache_dir) if use_cache else None
    context = context_files([s.path for s, _ in sources], config, covered, listings)
    config_paths = [str(path) for path in configs]
    prepared = _Prepared(
        sources, outcomes, notices, config, checked, context, config_paths, jobs, use_cache, digests
    )
    prepared.splats = splats
    if not use_cache:
        return prepared
    # The model's facts for a set of files seen before (a warm run) are cached as a whole,
    # keyed by the checked files' contents and the context files' signatures.
    facts_cache = FactsCache(config.root / config.cache_dir)
    known = {str(s.path): digests[s.display] for s, _ in sources}
    facts_key = FactsCache.key(
        [f"{path}:{(known.get(path) or text_digest(text)).hex()}" for path, text in checked]
        + [context_signature(path) for path in context]
        + [context_signature(path) for path in config_paths]
        + [f"hot-method:{name}" for name in sorted(config.hot_methods)]
        + [f"lightning-version:{config.lightning_version}"]
    )
    found = facts_cache.get(facts_key)
    if found is not None and any(context_signature(p) != sig for p, sig in found[2].items()):
        found = None  # a README or shell script the analysis read has changed
    if found is not None:
        table, prepared.facts, texts = found
    else:
        from tpulint.analysis import text_reads
        from tpulint.analysis.scope import forget_text_reads

        forget_text_reads()
        project = prepared.model()
        table = project.lightning_table()
        prepared.facts = {
            str(s.path): project.file_digest(str(s.path))
            for s, _ in sources
            if s.path.suffix == ".py"
        }
        texts = {path: context_signature(path) for path in sorted(text_reads.noted())}
        facts_cache.put(facts_key, table, prepared.facts, texts)
    # Findings read from other files are reused only for the same sources and text files.
    prepared.project_key = FactsCache.key([facts_key, *(f"{p}:{s}" for p, s in texts.items())])
    prepared.results = ResultCache(
        config.root / config.cache_dir, cache_name(config.fingerprint(), table_digest(table))
    )
    return prepared


def project_model(
    paths: Sequence[str], config: Config, *, use_cache: bool = True, jobs: int = 1
) -> ProjectModel:
    """The project model `check_paths` would use for `paths` (for front ends that check one
    file at a time with the whole project in view: the language server)."""
    return _prepare(paths, config, use_cache, jobs).model()


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
    run = RunResult(files=list(prepared.outcomes), notices=prepared.notices)
    todo: list[tuple[str, str, str]] = []
    keys: dict[str, str] = {}
    for source, text in prepared.sources:
        key = prepared.key(source, prepared.digests[source.display]) if cache else ""
        cached = cache.get(key, prepared.project_key) if cache else None
        if cached is not None:
            run.files.append(FileOutcome(source.display, cached))
            continue
        keys[source.display] = key
        todo.append((source.display, str(source.path), text))
    run.checked = len(prepared.sources)
    run.cache_hits = run.checked - len(todo)
    run.parsed = len(todo)
    for display, diagnostics, error, parsed in _run(
        todo,
        _check_one,
        (),
        _crashed_check,
        config,
        prepared.model() if todo else None,
        jobs,
        progress,
    ):
        run.libcst_parsed += parsed
        if error is not None:
            run.internal_errors.append(f"{display}: {error}")
            run.files.append(FileOutcome(display, error=error))
            continue
        run.files.append(FileOutcome(display, diagnostics))
        # Results computed without a file the model could not summarise are not kept.
        if cache and not prepared.model_failures:
            cache.put(keys[display], diagnostics, prepared.project_key)
    run.internal_errors[:0] = prepared.model_failures
    if cache:
        cache.save()
    run.files.sort(key=lambda f: f.path)
    return run


def _needs_fix(diagnostics: list[Diagnostic], unsafe: bool) -> bool:
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    return any(d.fix is not None and d.fix.applicability in allowed for d in diagnostics)


def _identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) a path leads to: symlinks and hard links to one file share it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def fix_paths(
    paths: Sequence[str],
    config: Config,
    *,
    unsafe: bool = False,
    apply: bool = False,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    on_written: Callable[[FileOutcome], None] | None = None,
) -> RunResult:
    """Fix files and folders; write the results only when `apply` is true.

    A file is written (see tpulint.runner.writing) only if its fixed source parses (the engine
    guarantees it), the file on disk still has the content that was read, and the user may
    write it. `on_written` is called for each file as soon as it is written. A file reached
    through several names (symlinks, hard links) is fixed once, through the first name; the
    others report the same remaining findings. After a refused write, a file reports the
    findings of its content on disk."""
    jobs = jobs or os.cpu_count() or 1
    prepared = _prepare(paths, config, use_cache, jobs)
    cache = prepared.results
    run = RunResult(files=list(prepared.outcomes), notices=prepared.notices)
    todo: list[tuple[str, str, str]] = []
    originals: dict[str, tuple[SourcePath, str]] = {}
    first_name: dict[tuple[int, int], str] = {}
    aliases: list[tuple[str, str]] = []  # (display path, the display path it is fixed through)
    for source, text in prepared.sources:
        identity = _identity(source.path) if apply else None
        if identity is not None:
            if identity in first_name:
                aliases.append((source.display, first_name[identity]))
                continue
            first_name[identity] = source.display
        key = prepared.key(source, prepared.digests[source.display]) if cache else ""
        cached = cache.get(key, prepared.project_key) if cache else None
        if cached is not None and not _needs_fix(cached, unsafe):
            run.files.append(FileOutcome(source.display, cached))
            continue
        originals[source.display] = (source, text)
        todo.append((source.display, str(source.path), text))
    run.checked = len(prepared.sources)
    run.cache_hits = run.checked - len(todo) - len(aliases)
    run.parsed = len(todo)
    done: list[tuple[SourcePath, str, FixResult]] = []
    for display, result, error, parsed in _run(
        todo,
        _fix_one,
        (unsafe,),
        _crashed_fix,
        config,
        prepared.model() if todo else None,
        jobs,
        progress,
    ):
        run.libcst_parsed += parsed
        source, original = originals[display]
        if error is not None or result is None:
            run.internal_errors.append(f"{display}: {error}")
            run.files.append(FileOutcome(display, error=error))
            continue
        done.append((source, original, result))
    if unsafe and done:
        done = _apply_groups(done, prepared, run, apply)
    for source, original, result in done:
        display = source.display
        outcome = FileOutcome(display, result.remaining, result, original, result.error)
        if apply and result.changed and result.error is None:
            _write(outcome, source, original, result, config, prepared.model(), run)
            if outcome.written and on_written is not None:
                on_written(outcome)
        if cache and not prepared.model_failures and (outcome.written or not result.changed):
            new_text = result.source if outcome.written else original
            # A written file changes the project: results that depend on it are not kept.
            cache.put(
                prepared.key(source, text_digest(new_text)),
                result.remaining,
                "" if outcome.written else prepared.project_key,
            )
        run.files.append(outcome)
    run.internal_errors[:0] = prepared.model_failures
    by_path = {f.path: f for f in run.files}
    for display, through in aliases:
        first = by_path.get(through)
        diagnostics = [d.with_path(display) for d in first.diagnostics] if first else []
        run.files.append(FileOutcome(display, diagnostics))
    if cache:
        cache.save()
    run.files.sort(key=lambda f: f.path)
    return run


# --- fixes that span files -------------------------------------------------------------------


def _apply_groups(
    done: list[tuple[SourcePath, str, FixResult]],
    prepared: _Prepared,
    run: RunResult,
    apply: bool,
) -> list[tuple[SourcePath, str, FixResult]]:
    """Apply the fixes that span files (tpulint.runner.groups): each file they touch is
    fixed again from its text as read, with their edits, then its own fixes. Returns `done`
    with those files' results replaced (files only such a fix touches are added)."""
    from tpulint.engine.source import fix_source
    from tpulint.runner import groups
    from tpulint.runner.writing import may_write

    texts = {groups.real(str(s.path)): (s, text) for s, text in prepared.sources}

    def shown(path: str) -> str:
        found = texts.get(path)
        return found[0].display if found is not None else path

    found = groups.collect(
        (str(source.path), original, d)
        for source, original, result in done
        for d in result.remaining
        if d.fixable(True) and prepared.config.shows(d)
    )
    if not found:
        return done
    accepted, notices = groups.accept(
        found.values(),
        lambda path: texts[path][1] if path in texts else None,
        (lambda path, text: may_write(texts[path][0].path, text)) if apply else None,
        shown,
    )
    run.notices += notices
    if not accepted:
        return done

    def fix_file(path: str, edits: list[Edit]) -> FixResult:
        source, text = texts[path]
        return fix_source(
            text,
            str(source.path),
            prepared.config,
            unsafe=True,
            project=prepared.model(),
            extra_edits=edits,
        )

    results, _, notices = groups.refix(accepted, fix_file, shown)
    run.notices += notices
    for result in results.values():
        result.fixed = [d.with_path(shown(groups.real(d.path))) for d in result.fixed]
        result.remaining = [d.with_path(shown(groups.real(d.path))) for d in result.remaining]
    out = []
    for source, original, result in done:
        out.append((source, original, results.pop(groups.real(str(source.path)), result)))
    for key, result in results.items():
        source, text = texts[key]
        out.append((source, text, result))
        run.files = [f for f in run.files if f.path != source.display]
    return out


def _write(
    outcome: FileOutcome,
    source: SourcePath,
    original: str,
    result: FixResult,
    config: Config,
    project: ProjectModel,
    run: RunResult,
) -> None:
    """Write one fixed file; when it is not written, its findings become those of the file
    as it is on disk (the fixed text exists nowhere)."""
    try:
        outcome.error = write_if_unchanged(source.path, original, result.source)
    except Exception as exc:  # a bug in writing one file must not hide the others
        outcome.error = f"not written: internal error ({_failure(exc)})"
        run.internal_errors.append(f"{source.display}: {_failure(exc)}")
    outcome.written = outcome.error is None
    if outcome.written:
        return
    from tpulint.engine.source import check_source

    try:
        on_disk = check_source(original, str(source.path), config, project=project)
        outcome.diagnostics = [d.with_path(source.display) for d in on_disk]
    except Exception as exc:
        run.internal_errors.append(f"{source.display}: {_failure(exc)}")
        outcome.diagnostics = []
