"""Building the project model of a run: the files to model, their summaries (from the cache
or computed, in parallel when there are many), and the model.

The files modelled are the files being checked plus their context: the rest of each checked
file's top-level package (so a helper checked alone still knows that `training_step` in
another module calls it), and, for scripts outside packages, the sibling modules they import.
Context files are modelled, never checked.
"""

from __future__ import annotations

import gc
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tpulint.analysis.modules import module_name_for_path, package_root
from tpulint.config.settings import Config
from tpulint.runner.cache import ListingCache, ScanCache, content_key
from tpulint.runner.discovery import SourcePath, read_source

if TYPE_CHECKING:
    from tpulint.analysis.config_facts import ConfigFacts
    from tpulint.analysis.project import ProjectModel
    from tpulint.analysis.summary import ModuleSummary

# The model's modules (`ast` summaries, the project model) are imported by the functions that
# build it: a run answered from the cache only lists the context files.

# Context files read at most (a checked file deep in a huge monorepo package).
MAX_CONTEXT_FILES = 5000
# Below this many files to summarise, a process pool costs more than it saves. (Forking the
# workers costs milliseconds; a package of 176 files summarised in the parent made a third
# of its cold run serial, with the engine's import after it instead of beside the workers.)
PARALLEL_THRESHOLD = 48
# A package listing is cached only when its folders are older than this (see _package_files).
RACY_NS = 2_000_000_000
SUMMARY_FORMAT = "s105"  # part of every summary's cache key: bump when summaries change


def _summary_key(module: str | None, is_package: bool, text: str) -> str:
    return content_key(f"{SUMMARY_FORMAT}:{module}:{is_package}", text)


def _summarize_batch(items: list[tuple[str, str]]) -> list[ModuleSummary]:

    # `ast` trees hold no reference cycles: reference counting frees each one, and the cyclic
    # collector, which would otherwise run over and over while a tree is built, is paused
    # (a fifth of the time, measured).
    enabled = gc.isenabled()
    gc.disable()
    try:
        out = []
        for item in items:
            out.append(_summarize_one(item))
        return out
    finally:
        if enabled:
            gc.enable()


def summarize_files(
    items: Sequence[tuple[str, str]],
    cache: ScanCache | None,
    jobs: int,
    meanwhile: Callable[[], None] | None = None,
) -> list[ModuleSummary]:
    """Summaries of (absolute path, text) pairs, from the cache where it has them.
    `meanwhile` is called once worker processes summarising them have started (the parent
    is then mostly waiting); not at all when there are too few files for workers (a run
    that rebuilds the model of a few files may answer every check from the cache)."""
    from tpulint.analysis.summary import ModuleSummary

    summaries: list[ModuleSummary] = []
    todo: list[tuple[str, str]] = []
    keys: dict[str, str] = {}
    for path, text in items:
        if cache is None:
            todo.append((path, text))
            continue
        module, is_package = module_name_for_path(path)
        key = _summary_key(module, is_package, text)
        cached = cache.get_raw(key)
        if cached is not None:
            try:
                summaries.append(ModuleSummary.from_json(path, cached))
                continue
            except (KeyError, TypeError, IndexError, ValueError, AttributeError):
                cache.discard(key)  # an entry of another shape: recompute it
        keys[path] = key
        todo.append((path, text))
    if len(todo) >= PARALLEL_THRESHOLD and jobs > 1:
        computed = _parallel(todo, jobs, meanwhile)
    else:
        computed = _summarize_batch(todo)
    for summary in computed:
        summaries.append(summary)
        if cache is not None and summary.path in keys and summary.failure is None:
            cache.put_raw(keys[summary.path], summary.to_json())
    # In the order of `items` whatever came from the cache or the workers (first come first).
    order = {path: index for index, (path, _) in reversed(list(enumerate(items)))}
    summaries.sort(key=lambda summary: order.get(summary.path, len(order)))
    return summaries


def _parallel(
    items: list[tuple[str, str]], jobs: int, meanwhile: Callable[[], None] | None = None
) -> list[ModuleSummary]:
    from tpulint.runner.pool import Pool

    items = sorted(items, key=lambda item: len(item[1]), reverse=True)
    count = max(1, min(len(items), jobs * 8))
    batches: list[list[tuple[str, str]]] = [[] for _ in range(count)]
    for index, item in enumerate(items):
        batches[index % count].append(item)
    with Pool(jobs, _pause_collector) as pool:
        return list(pool.map(_summarize_one, batches, (), _unparsed, on_started=meanwhile))


def _pause_collector() -> None:
    gc.disable()  # see _summarize_batch; a worker ends with the run


def _summarize_one(item: tuple[str, str]) -> ModuleSummary:
    from tpulint.analysis.summary import summarize

    path, text = item
    module, is_package = module_name_for_path(path)
    try:
        return summarize(text, path, module, is_package)
    except Exception as exc:  # one file's failure is reported; the run goes on
        from tpulint.runner.pool import describe_exception

        return _unparsed(item, describe_exception(exc))


def _unparsed(item: tuple[str, str], why: str) -> ModuleSummary:
    """A file whose summarising failed (it raised, or ended its worker): modelled as one `ast`
    could not parse, with the failure kept for the run to report (`ModuleSummary.failure`)."""
    from tpulint.analysis.summary import ModuleSummary

    path = item[0]
    module, is_package = module_name_for_path(path)
    return ModuleSummary(path, module, is_package, parsed=False, failure=why)


def _read(path: str, config: Config) -> str | None:
    """A context file's text; None for one that is not a readable regular file within
    `max-file-size` (a FIFO among the modules must not block the run)."""
    text, _ = read_source(SourcePath(path, Path(path)), config.max_file_size)
    return text


def _excluded(name: str, config: Config) -> bool:
    return name.startswith(".") or name in config.exclude or name == "__pycache__"


def context_files(
    checked: Iterable[Path],
    config: Config,
    covered: Sequence[str] = (),
    listings: ListingCache | None = None,
) -> list[str]:
    """Files that give the checked files their context (see the module docstring). A package
    inside a folder named in `covered` (the folders the run walks) is not walked again: its
    files are checked already, and those the run excludes are not the project's."""
    # Strings and one look per folder: a warm run checks hundreds of files of one package,
    # and this runs before every cache lookup.
    names = (os.fspath(p) for p in checked)
    checked_paths = [os.path.abspath(n) if n[:1] != "/" else n for n in names if n.endswith(".py")]
    seen = set(checked_paths)
    out: list[str] = []
    packages: set[str] = set()
    folders: dict[str, str | None] = {}  # folder -> its top-level package folder, if any
    for path in checked_paths:
        folder = os.path.dirname(path)
        if folder in folders:
            continue
        module, _ = module_name_for_path(path)
        if module is None:
            continue  # not importable (`my-script.py`): gives its folder no context
        top_package = None
        top = os.path.join(str(package_root(path)), module.split(".", 1)[0])
        if os.path.isfile(os.path.join(top, "__init__.py")):
            top_package = top
        folders[folder] = top_package
        if top_package is not None:
            packages.add(top_package)
        elif module == os.path.splitext(os.path.basename(path))[0] and os.path.isdir(folder):
            # Scripts outside packages: their sibling modules are what they can import.
            for name in sorted(os.listdir(folder)):
                sibling = os.path.join(folder, name)
                if name.endswith(".py") and sibling not in seen and os.path.isfile(sibling):
                    seen.add(sibling)
                    out.append(sibling)
    roots = [os.path.abspath(folder) for folder in covered]
    for package in sorted(packages):
        if any(package == root or package.startswith(root + os.sep) for root in roots):
            continue
        for path in _package_files(package, config, listings):
            if path not in seen:
                seen.add(path)
                out.append(path)
            if len(out) >= MAX_CONTEXT_FILES:
                return out
    return out


def _package_files(package: str, config: Config, listings: ListingCache | None) -> list[str]:
    """The Python files of a package folder, from the listing cache while no folder changed."""
    excluded = list(config.exclude)
    if listings is not None:
        cached = listings.get(package, excluded)
        if cached is not None:
            return cached
    folders: dict[str, int] = {}
    files_found: list[str] = []
    for directory, dirs, files in os.walk(package):
        try:
            folders[directory] = os.stat(directory).st_mtime_ns
        except OSError:
            continue
        dirs[:] = sorted(d for d in dirs if not _excluded(d, config))
        files_found += [os.path.join(directory, n) for n in sorted(files) if n.endswith(".py")]
    # A folder changed in the last seconds may change again within its clock tick without a
    # new modification time (git's "racy" entries): such a listing is not kept.
    settled = time.time_ns() - RACY_NS
    if listings is not None and all(mtime < settled for mtime in folders.values()):
        listings.put(package, excluded, folders, files_found)
    return files_found


def model_inputs(
    sources: Sequence[tuple[Path, str]], config: Config, with_context: bool = True
) -> list[tuple[str, str]]:
    """(absolute path, text) of the checked Python files and their context files."""
    items = checked_inputs(sources)
    if with_context:
        items += read_context(context_files([p for p, _ in sources], config), config)
    return items


def checked_inputs(sources: Sequence[tuple[Path, str]]) -> list[tuple[str, str]]:
    """(absolute path, text) of the checked Python files."""
    return [(str(path.absolute()), text) for path, text in sources if path.suffix == ".py"]


def read_context(paths: Iterable[str], config: Config) -> list[tuple[str, str]]:
    """(path, text) of the context files that can be read."""
    items = []
    for path in paths:
        text = _read(path, config)
        if text is not None:
            items.append((path, text))
    return items


def context_signature(path: str) -> str:
    """What identifies a context file's version without reading it (size, modification time
    in nanoseconds, inode), as Ruff's cache does: a warm run lists its context, not reads it."""
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def with_star_bindings(
    model: ProjectModel,
    summaries: list[ModuleSummary],
    items: Sequence[tuple[str, str]],
    cache: ScanCache | None,
) -> list[ModuleSummary] | None:
    """The summaries again, with the files whose star imports of project modules bring
    imports (`from utils import *` binding the `torch` that `utils` imports) summarised
    once more with those bindings (ModuleSummary.star_bindings); None when there is none."""
    from tpulint.analysis.summary import ModuleSummary, summarize

    texts = dict(items)
    out: list[ModuleSummary] = []
    changed = False
    for summary in summaries:
        text = texts.get(summary.path)
        bindings = (
            model.star_bindings(summary)
            if summary.parsed and summary.scope.star_imports and text is not None
            else {}
        )
        if not bindings or bindings == summary.star_bindings:
            out.append(summary)
            continue
        module, is_package = module_name_for_path(summary.path)
        key = _summary_key(module, is_package, f"{sorted(bindings.items())}\n{text}")
        cached = cache.get_raw(key) if cache is not None else None
        again = None
        if cached is not None:
            try:
                again = ModuleSummary.from_json(summary.path, cached)
            except (KeyError, TypeError, IndexError, ValueError, AttributeError):
                cache.discard(key)  # type: ignore[union-attr]
        if again is None:
            try:
                again = summarize(text, summary.path, module, is_package, bindings)
            except Exception:  # the first summary stands (its failure was seen there)
                out.append(summary)
                continue
            if cache is not None:
                cache.put_raw(key, again.to_json())
        out.append(again)
        changed = True
    return out if changed else None


def model_of(
    items: Sequence[tuple[str, str]],
    config: Config,
    cache: ScanCache | None,
    jobs: int,
    configs: Sequence[tuple[str, str]] = (),
    meanwhile: Callable[[], None] | None = None,
) -> ProjectModel:
    """The model of (absolute path, text) pairs and of the project's YAML configs, with what
    every check reads computed once here, before the checking workers fork and inherit it.
    `meanwhile`: see summarize_files."""
    from tpulint.analysis.project import ProjectModel

    # Receiving the summaries and building the model allocate millions of small containers
    # and free none: the cyclic collector, which would traverse them over and over while
    # they are built, is paused (it took more CPU time than the unpickling itself, measured
    # on the corpus). Nothing built here is garbage until the run ends.
    enabled = gc.isenabled()
    gc.disable()
    try:
        summaries = summarize_files(items, cache, jobs, meanwhile)
        facts = read_configs(configs, cache)
        model = ProjectModel(summaries, config.hot_methods, config.lightning_version, facts)
        rebound = with_star_bindings(model, summaries, items, cache)
        if rebound is not None:
            model = ProjectModel(rebound, config.hot_methods, config.lightning_version, facts)
        model.lightning_table()
        # The caller index first: the hot set asks it (what a method's callers pass), and it
        # is built once, from no question (ProjectModel._build_callers).
        model.precompute_callers()
        model.hot  # noqa: B018
    finally:
        # The model lives until the run ends: kept out of the collector's generations, so
        # that the first collections after this do not traverse the millions of objects made
        # while the collector was paused (a fifth of a second on one package, measured), and
        # worker processes forked later leave its pages shared. Frozen objects are still
        # freed by reference counting (the model holds no reference cycles).
        gc.freeze()
        if enabled:
            gc.enable()
    return model


# Hydra configs: a `defaults:` list at the top, a `# @package` header, `_target_` classes.
# They are merged and read by the script that composes them, which may ignore their
# `trainer:` section (a torch_xla loop of its own): not checked unless named. A Hydra Trainer
# group file (`_target_: lightning.pytorch.Trainer`, itself or through `defaults:`) is the
# Trainer `hydra.utils.instantiate` builds: checked when it asks for TPUs or leaves the
# accelerator to `auto`.
_HYDRA = re.compile(r"(?m)^(defaults\s*:|#\s*@package\b)|^\s*(-\s+)?_target_\s*:")


def tpu_configs(
    paths: Iterable[str], config: Config, splats: Sequence[tuple[tuple[str, ...], str]] = ()
) -> list[str]:
    """The LightningCLI configs among the YAML files `paths` whose Trainer section asks for
    TPUs (`accelerator: tpu`, an XLA strategy, `tpu_cores`) or leaves the accelerator to
    `auto` (no `accelerator:`, no GPU-only strategy or `gpus:`), which picks the TPU on a TPU
    VM: configs of the project's TPU launch. Hydra configs are left out, but for Trainer
    group files and the sections the code spreads into a Trainer (`splats`: `Trainer(
    **cfg.trainer)`) that ask for TPUs."""
    from tpulint.analysis.config_facts import config_facts

    out = []
    for path in paths:
        text = _read(path, config)
        if text is None:
            continue
        if splats:
            # Imported only here: a warm run of a project that spreads no YAML section into
            # a Trainer loads no engine module (tests/test_manifest.py).
            from tpulint.engine.yaml_files import spread_verdict

            if spread_verdict(path, text, splats) == "tpu":
                out.append(path)
                continue
        if _HYDRA.search(text):
            from tpulint.engine.yaml_files import hydra_trainer_verdict

            if hydra_trainer_verdict(path, text) in ("tpu", "auto"):
                out.append(path)
            continue
        if config_facts(path, text).trainer in ("tpu", "auto"):
            out.append(path)
    return out


def read_configs(items: Sequence[tuple[str, str]], cache: ScanCache | None) -> list[ConfigFacts]:
    """What each YAML config names (tpulint.analysis.config_facts), from the cache where it
    has them."""
    from tpulint.analysis.config_facts import ConfigFacts, config_facts

    out = []
    for path, text in items:
        key = content_key(f"{SUMMARY_FORMAT}:config", text)
        cached = cache.get_raw(key) if cache is not None else None
        if isinstance(cached, dict) and cached.keys() == {"c", "t", "k", "w", "g", "l"}:
            out.append(ConfigFacts.from_json(path, cached))
            continue
        facts = config_facts(path, text)
        if cache is not None:
            cache.put_raw(key, facts.to_json())
        out.append(facts)
    return out


def build_project(
    sources: Sequence[tuple[Path, str]],
    config: Config,
    cache: ScanCache | None,
    jobs: int,
    with_context: bool = True,
) -> ProjectModel:
    """The model of the checked (path, text) pairs and their context files."""
    return model_of(model_inputs(sources, config, with_context), config, cache, jobs)


def project_for_source(text: str, path: str, config: Config) -> ProjectModel | None:
    """The model for one source read from stdin with a `--stdin-filename`: the file's
    package as on disk, with this text in place of the file."""
    if path in ("-", "<stdin>") or not path.endswith(".py"):
        return None
    absolute = Path(path).absolute()
    return build_project([(absolute, text)], config, None, os.cpu_count() or 1)


def with_source(model: ProjectModel, path: str, text: str, config: Config) -> ProjectModel:
    """`model` with `text` in place of the file at `path` (an editor's unsaved buffer), or
    `model` itself when the file is not one of its modules."""
    from tpulint.analysis.project import ProjectModel
    from tpulint.analysis.summary import summarize

    absolute = str(Path(path).absolute())
    if absolute not in model.modules:
        return model
    module, is_package = module_name_for_path(absolute)
    mine = summarize(text, absolute, module, is_package)
    bindings = model.star_bindings(mine) if mine.scope.star_imports else {}
    if bindings:
        mine = summarize(text, absolute, module, is_package, bindings)
    others = (m for p, m in model.modules.items() if p != absolute)
    return ProjectModel(
        [*others, mine], config.hot_methods, config.lightning_version, model.configs
    )
