"""The `tpulint` command line: check, fix, rules, explain, verify.

Exit codes (as Ruff): 0 clean, 1 findings (or findings left after `fix --apply`), 2 usage,
configuration or internal errors. Errors are one line on stderr starting with
`tpulint: error:`; tracebacks only with `-v`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from tpulint import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ("text", "full", "json", "sarif", "github")
SCOPES = ("tpu", "all")  # tpulint.config.settings.SCOPES (not imported: the CLI starts light)


class UserError(Exception):
    """A one-line error for the user (exit 2)."""


def fail(message: str) -> NoReturn:
    raise UserError(message)


def _split(values: Sequence[str]) -> list[str]:
    out = []
    for value in values:
        out += [part.strip() for part in value.split(",") if part.strip()]
    return out


def _use_color(stream: Any) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


class _Reporter:
    """Shared output plumbing: stdout for results, stderr for messages."""

    def __init__(self, quiet: int, verbose: bool) -> None:
        self.quiet = quiet
        self.verbose = verbose

    def out(self, text: str) -> None:
        if text:
            click.echo(text, nl=False, color=_use_color(sys.stdout))

    def info(self, text: str) -> None:
        if not self.quiet:
            click.echo(text, err=True, color=_use_color(sys.stderr))

    def debug(self, text: str) -> None:
        if self.verbose:
            click.echo(f"tpulint: {text}", err=True)

    def warn(self, text: str) -> None:
        click.echo(f"tpulint: warning: {text}", err=True)

    def error(self, text: str) -> None:
        click.echo(f"tpulint: error: {text}", err=True)


# --- shared options ----------------------------------------------------------------------


def _common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        # Paths are checked by discovery (one-line errors), not by click.
        click.argument("paths", nargs=-1, type=click.Path(readable=False)),
        click.option(
            "--select",
            multiple=True,
            metavar="CODES",
            help="Rules to enable (codes, prefixes like TPU1, names, or ALL); "
            "replaces the configured set.",
        ),
        click.option(
            "--extend-select",
            multiple=True,
            metavar="CODES",
            help="Rules to enable in addition to the configured set.",
        ),
        click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable."),
        click.option(
            "--preview/--no-preview",
            default=None,
            help="Also run the rules (and shapes of rules) in preview: not yet 95% precise on "
            "code read after they were frozen (`preview` in config).",
        ),
        click.option(
            "--unsafe-fixes/--no-unsafe-fixes",
            default=None,
            help="Also apply (or count as fixable) fixes that may change behaviour.",
        ),
        click.option(
            "--output-format",
            "-o",
            type=click.Choice(OUTPUT_FORMATS),
            default=None,
            help="How findings are printed (default: text, or `output-format` from config).",
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False),
            default=None,
            help="Read configuration from this TOML file instead of the nearest pyproject.toml.",
        ),
        click.option(
            "--scope",
            type=click.Choice(SCOPES),
            default=None,
            help="Which findings to report: `tpu` (default: code that trains on a TPU, "
            "reached from the project's TPU entry points when it has some) or `all`.",
        ),
        click.option("--no-cache", is_flag=True, help="Neither read nor write .tpulint_cache/."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are reported."),
        click.option(
            "--statistics",
            is_flag=True,
            help="Print the number of findings per rule instead of each finding.",
        ),
        click.option(
            "--force-exclude",
            is_flag=True,
            default=None,
            help="Apply excludes to files named on the command line too (for pre-commit).",
        ),
        click.option(
            "--stdin-filename",
            default=None,
            metavar="PATH",
            help="The path to use for source read from stdin (`-`).",
        ),
        click.option(
            "--max-file-size",
            default=None,
            metavar="SIZE",
            help="Skip files larger than this (e.g. 2MB, 500KB; 0: no limit; default 2MB, "
            "or `max-file-size` from config).",
        ),
        click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            default=None,
            help="Worker processes (default: one per CPU).",
        ),
        click.option(
            "-q",
            "--quiet",
            count=True,
            help="Print findings only (-qq: nothing but the exit code).",
        ),
        click.option(
            "-v", "--verbose", is_flag=True, help="Print timings, cache use and tracebacks."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _load(
    paths: Sequence[str],
    config_file: str | None,
    select: Sequence[str],
    extend_select: Sequence[str],
    ignore: Sequence[str],
    unsafe_fixes: bool | None,
    force_exclude: bool | None,
    output_format: str | None,
    max_file_size: str | None = None,
    scope: str | None = None,
    preview: bool | None = None,
    quiet: int = 0,
):
    from tpulint.config.settings import ConfigError, load_config, parse_size

    start = None
    real = [Path(p) for p in paths if p != "-"]
    if real:
        try:
            common = Path(os.path.commonpath([os.path.realpath(p) for p in real]))
        except ValueError:
            common = Path.cwd()
        # os.path's tests never raise: a path the user may not stat is reported by
        # discovery with its reason, after the configuration is found.
        start = common if os.path.isdir(common) else common.parent
        while not os.path.isdir(start) and start != start.parent:
            start = start.parent
    try:
        config = load_config(Path(config_file) if config_file else None, start=start)
        changes: dict[str, Any] = {}
        if unsafe_fixes is not None:
            changes["unsafe_fixes"] = unsafe_fixes
        if force_exclude:
            changes["force_exclude"] = True
        if output_format:
            changes["output_format"] = output_format
        if max_file_size is not None:
            changes["max_file_size"] = parse_size(max_file_size, "--max-file-size")
        if scope is not None:
            changes["scope"] = scope
        if preview is not None:
            changes["preview"] = preview
        if select and not _split(select):
            fail(
                "--select was given an empty value: name the rules to run (codes like "
                "TPU101, prefixes like TPU1, names, or ALL)"
            )
        config = config.with_cli(
            select=_split(select) if select else None,
            extend_select=_split(extend_select),
            ignore=_split(ignore),
            **changes,
        )
        config.enabled  # noqa: B018 - resolve the selection now, so errors surface here
    except ConfigError as exc:
        fail(str(exc))
    if not quiet:
        for warning in config.selection_warnings():
            click.echo(f"tpulint: warning: {warning}", err=True)
    return config


def _progress(reporter: _Reporter, total_hint: int) -> Callable[[int, int], None] | None:
    """A progress bar on a TTY for long runs; nothing otherwise."""
    if reporter.quiet or not sys.stderr.isatty():
        return None
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if total < 200:
            return
        bar = state.get("bar")
        if bar is None:
            bar = click.progressbar(length=total, label="Checking", file=sys.stderr, show_pos=True)
            bar.__enter__()
            state["bar"] = bar
        bar.update(done - state.get("done", 0))
        state["done"] = done
        if done >= total:
            bar.__exit__(None, None, None)

    return update


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    from tpulint.runner.discovery import decode_source

    try:
        return decode_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        fail("stdin is not valid UTF-8")


def _source_lookup(stdin_text: dict[str, str]) -> Callable[[str], str | None]:
    def lookup(path: str) -> str | None:
        if path in stdin_text:
            return stdin_text[path]
        try:
            from tpulint.runner.discovery import decode_source

            return decode_source(Path(path).read_bytes())
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
            return None

    return lookup


def _scoped(config, diagnostics) -> tuple[list, int]:
    """The findings the configured scope reports, and how many it leaves out."""
    shown = [d for d in diagnostics if config.shows(d)]
    return shown, len(diagnostics) - len(shown)


def _left_out_by(config, diagnostics) -> tuple[str, ...]:
    """The roots that left findings out as unreached (`scope_roots`), for the last line."""
    from tpulint.datatypes.diagnostics import scope_roots

    return scope_roots(d.scope for d in diagnostics if not config.shows(d))


def _emit(
    reporter: _Reporter,
    config,
    diagnostics,
    files_checked: int,
    statistics: bool,
    stdin_text: dict[str, str],
    summary_command: str = "tpulint fix --apply",
    outside: int = 0,
    roots: tuple[str, ...] = (),
) -> None:
    from tpulint.reporting import ReportOptions, render
    from tpulint.reporting.text import render_statistics, summary

    fmt = config.output_format
    options = ReportOptions(
        unsafe_fixes=config.unsafe_fixes,
        color=_use_color(sys.stdout) and fmt in ("text", "full"),
        files_checked=files_checked,
        source_lookup=_source_lookup(stdin_text),
        scope=config.scope,
        outside_scope=outside,
        scope_roots=roots,
    )
    if reporter.quiet >= 2:
        return
    if statistics and fmt in ("text", "full"):
        reporter.out(render_statistics(diagnostics, options))
    else:
        reporter.out(render(fmt, diagnostics, options))
    if fmt in ("text", "full") and not reporter.quiet:
        reporter.out(summary(diagnostics, options, fix_command=summary_command))


def _unified_diff(path: str, old: str, new: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    out = []
    for line in lines:
        if line.endswith("\r"):  # a line ending in a bare carriage return
            out.append(line + "\n")
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _colour_diff(text: str) -> str:
    if not _use_color(sys.stdout):
        return text
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            out.append(click.style(line, bold=True))
        elif line.startswith("+"):
            out.append(click.style(line, fg="green"))
        elif line.startswith("-"):
            out.append(click.style(line, fg="red"))
        elif line.startswith("@@"):
            out.append(click.style(line, fg="cyan"))
        else:
            out.append(line)
    return "".join(out)


def _guard(verbose: bool, body: Callable[[], int]) -> NoReturn:
    """Run a command body and turn every failure into a one-line error and exit code 2."""
    from tpulint.config.settings import ConfigError
    from tpulint.runner.discovery import PathError

    try:
        code = body()
    except (UserError, ConfigError, PathError) as exc:
        click.echo(f"tpulint: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        click.echo("tpulint: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        # Output piped into `head` and friends: not an error worth a traceback.
        sys.stderr.close()
        sys.exit(EXIT_ERROR)
    except Exception as exc:
        if verbose:
            import traceback

            traceback.print_exc()
        click.echo(
            f"tpulint: error: internal error: {type(exc).__name__}: {exc} (run with -v for the "
            "traceback; please report it)",
            err=True,
        )
        sys.exit(EXIT_ERROR)
    sys.exit(code)


# --- the group ---------------------------------------------------------------------------


class _LazyGroup(click.Group):
    """Subcommands whose modules are imported only when used (`verify` imports torch)."""

    lazy = {
        "verify": ("tpulint.runtime.command", "verify_command"),
        "doctor": ("tpulint.runtime.doctor", "doctor_command"),
        "report": ("tpulint.runtime.report_command", "report_command"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, attribute = self.lazy[name]
            try:
                import importlib

                return getattr(importlib.import_module(module_name), attribute)
            except ImportError as exc:
                message = f"`tpulint {name}` is unavailable: {exc}"

                @click.command(
                    name=name, help=message, context_settings={"ignore_unknown_options": True}
                )
                @click.argument("args", nargs=-1, type=click.UNPROCESSED)
                def unavailable(args: tuple[str, ...]) -> None:
                    click.echo(f"tpulint: error: {message}", err=True)
                    sys.exit(EXIT_ERROR)

                return unavailable
        return super().get_command(ctx, name)

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        """click's own usage errors as one `tpulint: error: ...` line with exit status 2
        (click prints a usage block and a separate error line)."""
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.UsageError as exc:
            hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            message = _lower_first(exc.format_message()).rstrip(".")
            click.echo(f"tpulint: error: {message}{hint}", err=True)
            sys.exit(EXIT_ERROR)
        except click.exceptions.ClickException as exc:
            click.echo(f"tpulint: error: {_lower_first(exc.format_message())}", err=True)
            sys.exit(EXIT_ERROR)
        except click.exceptions.Abort:
            click.echo("tpulint: interrupted", err=True)
            sys.exit(130)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else EXIT_CLEAN)


def _lower_first(message: str) -> str:
    message = " ".join(message.split())  # one line
    if len(message) > 1 and message[0].isupper() and not message[1].isupper():
        return message[0].lower() + message[1:]
    return message


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="tpulint")
def cli() -> None:
    """Find, fix and verify what makes PyTorch Lightning code slow or broken on TPUs.

    \b
      tpulint check src/           report findings
      tpulint fix src/             show the fixes as a diff
      tpulint fix --apply src/     write the safe fixes
      tpulint verify pkg.mod:Model train on 8 (emulated) XLA cores and prove it
      tpulint doctor               what verify would run on (TPU type, cores, versions)
      tpulint report DIR           judge a run TPUReadiness recorded
      tpulint rules                list the rules;  tpulint explain TPU202
      tpulint server               language server for editors (stdio)
    """


# --- check -------------------------------------------------------------------------------


@cli.command()
@_common_options
@click.option(
    "--diff",
    is_flag=True,
    help="Show the fixes as a unified diff instead of the findings (writes nothing).",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Add `# noqa: CODE` comments for every current finding (adopting tpulint on legacy code).",
)
def check(paths: tuple[str, ...], diff: bool, add_noqa: bool, **options: Any) -> None:
    """Report TPU problems in PATHS (files, folders, or - for stdin; default: .)."""
    verbose = options["verbose"]
    _guard(verbose, lambda: _check(list(paths) or ["."], diff, add_noqa, **options))


def _check(
    paths: list[str],
    diff: bool,
    add_noqa: bool,
    *,
    select,
    extend_select,
    ignore,
    preview,
    unsafe_fixes,
    output_format,
    config_file,
    scope,
    no_cache,
    exit_zero,
    statistics,
    force_exclude,
    stdin_filename,
    max_file_size,
    jobs,
    quiet,
    verbose,
) -> int:
    reporter = _Reporter(quiet, verbose)
    config = _load(
        paths,
        config_file,
        select,
        extend_select,
        ignore,
        unsafe_fixes,
        force_exclude,
        output_format,
        max_file_size,
        scope,
        preview=preview,
        quiet=quiet,
    )
    if diff:
        return _fix(
            paths,
            apply=False,
            exit_non_zero_on_fix=False,
            select=(),
            extend_select=(),
            ignore=(),
            preview=config.preview,
            unsafe_fixes=config.unsafe_fixes,
            output_format=config.output_format,
            config_file=config_file,
            scope=config.scope,
            no_cache=no_cache,
            exit_zero=exit_zero,
            statistics=statistics,
            force_exclude=force_exclude,
            stdin_filename=stdin_filename,
            max_file_size=max_file_size,
            jobs=jobs,
            quiet=quiet,
            verbose=verbose,
            _config=config,
        )
    started = time.perf_counter()
    stdin_text: dict[str, str] = {}
    internal_errors: list[str] = []
    if paths == ["-"]:
        from tpulint.engine.source import InternalError, check_source
        from tpulint.runner.project_build import project_for_source

        name = stdin_filename or "-"
        text = _read_stdin()
        stdin_text[name] = text
        try:
            project = project_for_source(text, name, config)
            diagnostics = check_source(text, name, config, project=project)
        except InternalError as exc:
            diagnostics, internal_errors = [], [f"{name}: {exc}"]
        files_checked = 1
    else:
        if "-" in paths:
            fail("`-` (stdin) cannot be combined with other paths")
        from tpulint.runner.paths import check_paths

        run = check_paths(
            paths, config, use_cache=not no_cache, jobs=jobs, progress=_progress(reporter, 0)
        )
        for notice in run.notices:
            reporter.warn(notice)
        diagnostics = run.diagnostics
        internal_errors = run.internal_errors
        files_checked = run.checked
        reporter.debug(
            f"checked {run.checked} files ({run.cache_hits} from cache, {run.parsed} analysed, "
            f"{run.libcst_parsed} parsed with libcst) in {time.perf_counter() - started:.2f}s"
        )
    for error in internal_errors:
        reporter.error(f"internal error in {error}")
    roots = _left_out_by(config, diagnostics)
    diagnostics, outside = _scoped(config, diagnostics)
    if add_noqa:
        return _add_noqa(reporter, diagnostics, internal_errors)
    _emit(
        reporter,
        config,
        diagnostics,
        files_checked,
        statistics,
        stdin_text,
        outside=outside,
        roots=roots,
    )
    if internal_errors:
        return EXIT_ERROR
    if diagnostics and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _add_noqa(reporter: _Reporter, diagnostics, internal_errors: list[str]) -> int:
    from tpulint.engine.source import add_noqa_comments
    from tpulint.runner.discovery import decode_source
    from tpulint.runner.paths import write_if_unchanged

    by_path: dict[str, list] = {}
    for d in diagnostics:
        if d.code.startswith("TPL"):
            continue  # files not checked (TPL002-5) and stale suppressions take no noqa
        by_path.setdefault(d.path, []).append(d)
    if "-" in by_path:
        fail("--add-noqa cannot write to stdin")
    total = 0
    for path, items in sorted(by_path.items()):
        file = Path(path)
        try:
            original = decode_source(file.read_bytes())
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            reporter.warn(f"{path}: not changed: {exc}")
            continue
        try:
            new, added = add_noqa_comments(original, path, items)
        except ValueError as exc:
            reporter.warn(f"{path}: not changed: {exc}")
            continue
        if not added or new == original:
            continue
        error = write_if_unchanged(file, original, new)
        if error:
            reporter.warn(f"{path}: {error}")
            continue
        total += added
    reporter.info(f"Added {total} noqa comment{'s' if total != 1 else ''}.")
    return EXIT_ERROR if internal_errors else EXIT_CLEAN


# --- fix ---------------------------------------------------------------------------------


@cli.command()
@_common_options
@click.option(
    "--apply", is_flag=True, help="Write the fixes (default: show them as a unified diff)."
)
@click.option(
    "--diff", "show_diff", is_flag=True, help="Show the diff (the default without --apply)."
)
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="With --apply, exit 1 if any file was changed, even when nothing is left to report.",
)
@click.option(
    "--prove",
    metavar="TARGET",
    default=None,
    help="Train TARGET (`module:Class` or `file.py:Class`) as written and rewritten, and apply"
    " only the unsafe fixes of its files that keep the training the same (with --unsafe-fixes).",
)
def fix(
    paths: tuple[str, ...],
    apply: bool,
    show_diff: bool,
    exit_non_zero_on_fix: bool,
    prove: str | None,
    **options: Any,
) -> None:
    """Fix TPU problems in PATHS: show a diff, or write with --apply.

    Safe fixes only, unless --unsafe-fixes. With - the fixed source is written to stdout.
    With --prove TARGET, unsafe fixes are applied only where training shows them equivalent.
    """
    verbose = options["verbose"]
    if prove is not None:
        from tpulint.runtime.prove_command import run_prove

        _guard(verbose, lambda: run_prove(prove, list(paths), apply=apply, load=_load, **options))
        return
    _guard(
        verbose,
        lambda: _fix(
            list(paths) or ["."], apply=apply, exit_non_zero_on_fix=exit_non_zero_on_fix, **options
        ),
    )


def _fix(
    paths: list[str],
    *,
    apply: bool,
    exit_non_zero_on_fix: bool,
    select,
    extend_select,
    ignore,
    preview,
    unsafe_fixes,
    output_format,
    config_file,
    scope,
    no_cache,
    exit_zero,
    statistics,
    force_exclude,
    stdin_filename,
    max_file_size,
    jobs,
    quiet,
    verbose,
    _config=None,
) -> int:
    reporter = _Reporter(quiet, verbose)
    config = _config or _load(
        paths,
        config_file,
        select,
        extend_select,
        ignore,
        unsafe_fixes,
        force_exclude,
        output_format,
        max_file_size,
        scope,
        preview=preview,
        quiet=quiet,
    )
    unsafe = config.unsafe_fixes
    if paths == ["-"]:
        from tpulint.engine.source import fix_source
        from tpulint.runner.project_build import project_for_source

        name = stdin_filename or "-"
        text = _read_stdin()
        project = project_for_source(text, name, config)
        result = fix_source(text, name, config, unsafe=unsafe, project=project)
        if result.error:
            reporter.warn(f"{name}: {result.error}")
        sys.stdout.write(result.source)
        sys.stdout.flush()
        result.remaining, _ = _scoped(config, result.remaining)
        for d in result.remaining:
            click.echo(f"{d.path}:{d.start.line}:{d.start.column}: {d.code} {d.message}", err=True)
        if result.remaining and not exit_zero:
            return EXIT_FINDINGS
        return EXIT_CLEAN
    if "-" in paths:
        fail("`-` (stdin) cannot be combined with other paths")
    from tpulint.runner.paths import fix_paths

    started = time.perf_counter()

    def written(outcome) -> None:
        # Said as each file is written, so an error or an interruption later in the run
        # never leaves a written file unreported.
        count = len(outcome.fix.fixed) if outcome.fix else 0
        if count == 0 and outcome.fix is not None and outcome.fix.rewritten:
            # Edited only by a fix of findings in other files (it reads their values).
            reporter.info(f"Rewrote {outcome.path} with the fix of a finding in another file")
            return
        reporter.info(f"Fixed {count} finding{'s' if count != 1 else ''} in {outcome.path}")

    run = fix_paths(
        paths,
        config,
        unsafe=unsafe,
        apply=apply,
        use_cache=not no_cache,
        jobs=jobs,
        progress=_progress(reporter, 0),
        on_written=written,
    )
    for notice in run.notices:
        reporter.warn(notice)
    reporter.debug(
        f"looked at {run.checked} files ({run.cache_hits} from cache, {run.parsed} analysed, "
        f"{run.libcst_parsed} parsed with libcst) in {time.perf_counter() - started:.2f}s"
    )
    for error in run.internal_errors:
        reporter.error(f"internal error in {error}")
    not_written = [f for f in run.files if f.fix and f.fix.changed and f.error]
    for outcome in not_written:
        reporter.warn(f"{outcome.path}: {outcome.error}")
    changed = [f for f in run.files if f.fix and f.fix.changed and not f.error]
    fixed_count = sum(len(f.fix.fixed) for f in changed if f.fix)
    remaining, outside = _scoped(config, run.diagnostics)
    if not apply:
        diffs = "".join(
            _unified_diff(f.path, f.original or "", f.fix.source) for f in changed if f.fix
        )
        if reporter.quiet < 2:
            reporter.out(_colour_diff(diffs))
        would_remain, _ = _scoped(
            config,
            [
                d
                for f in run.files
                for d in (f.diagnostics if not (f.fix and f.fix.changed) else f.fix.remaining)
            ],
        )
        reporter.info(
            f"Would fix {fixed_count} finding{'s' if fixed_count != 1 else ''} in {len(changed)} "
            f"file{'s' if len(changed) != 1 else ''}"
            + (f"; {len(would_remain)} would remain" if would_remain else "")
            + (". Run with --apply to write." if changed else ".")
        )
        if run.internal_errors:
            return EXIT_ERROR
        if (changed or remaining) and not exit_zero:
            return EXIT_FINDINGS
        return EXIT_CLEAN
    if remaining:
        _emit(
            reporter,
            config,
            remaining,
            run.checked,
            statistics,
            {},
            summary_command="tpulint fix --apply",
            outside=outside,
            roots=_left_out_by(config, run.diagnostics),
        )
    reporter.info(
        f"Fixed {fixed_count} finding{'s' if fixed_count != 1 else ''} in {len(changed)} "
        f"file{'s' if len(changed) != 1 else ''}; {len(remaining)} remaining."
    )
    if run.internal_errors:
        return EXIT_ERROR
    if not_written:
        return EXIT_FINDINGS
    if remaining and not exit_zero:
        return EXIT_FINDINGS
    if exit_non_zero_on_fix and changed:
        return EXIT_FINDINGS
    return EXIT_CLEAN


# --- rules / explain ---------------------------------------------------------------------


@cli.command()
@click.option("--output-format", "-o", type=click.Choice(["text", "json"]), default="text")
@click.option("--all", "show_all", is_flag=True, help="Also list tpulint's own TPL rules.")
def rules(output_format: str, show_all: bool) -> None:
    """List the rules with their status (stable or preview), fix safety and default state."""
    from tpulint.config.registry import FAMILY_TITLES, catalogue

    # The manifest's metadata: listing the rules imports none of them.
    selected = [r for r in catalogue() if show_all or not r.code.startswith("TPL")]
    if output_format == "json":
        import json

        click.echo(
            json.dumps(
                [
                    {
                        "code": r.code,
                        "name": r.name,
                        "summary": r.summary,
                        "family": r.family(),
                        "severity": r.severity.value,
                        "fix": r.fix_availability(),
                        "status": r.status,
                        "preview": r.preview,
                        "default_enabled": r.default_enabled or r.always_on,
                    }
                    for r in selected
                ],
                indent=2,
            )
        )
        return
    name_width = max(len(r.name) for r in selected)
    fix_width = max(len(r.fix_availability()) for r in selected)
    family = None
    for rule in selected:
        if rule.family() != family:
            family = rule.family()
            click.echo(
                ("\n" if rule is not selected[0] else "")
                + click.style(FAMILY_TITLES.get(family, family), bold=True)
            )
        default = "on " if rule.default_enabled or rule.always_on else "off"
        click.echo(
            f"  {rule.code}  {rule.name:<{name_width}}  {rule.status:<7}  "
            f"{rule.fix_availability():<{fix_width}}  {default}  {rule.summary}"
        )
    click.echo(
        "\nstatus: stable = in the default set; preview = runs only with --preview "
        "(`preview = true`) until it is 95% precise on code read after it was frozen."
        "\nfix: safe = applied by `tpulint fix --apply`; unsafe = with --unsafe-fixes; "
        "display-only = shown, never applied.  Default: on/off (opt-in)."
    )


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print a rule's documentation (by code or name: TPU202, boolean-mask-indexing)."""
    from tpulint.config.registry import find_rule
    from tpulint.docs import render_rule

    rule = find_rule(code)
    if rule is None:
        import difflib as _difflib

        from tpulint.config.registry import catalogue

        candidates = [r.code for r in catalogue()] + [r.name for r in catalogue()]
        close = _difflib.get_close_matches(code, candidates, n=1)
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        click.echo(f"tpulint: error: unknown rule `{code}`{hint}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(render_rule(rule), nl=False)


# --- server ------------------------------------------------------------------------------


@cli.command()
def server() -> None:
    """Run the language server on stdio (for editors): diagnostics, fixes and rule pages."""
    try:
        from tpulint.server import serve
    except ImportError as exc:
        click.echo(
            f"tpulint: error: `tpulint server` needs pygls and lsprotocol ({exc}): "
            "pip install 'tpulint[server]'",
            err=True,
        )
        sys.exit(EXIT_ERROR)
    serve()


def main() -> None:
    cli(prog_name="tpulint")
