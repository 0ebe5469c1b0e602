"""`tpulint fix --prove TARGET`: the command-line side of runtime/prove.py.

Imports only click and the standard library at import time (the CLI imports it when `--prove`
is given); prove.py trains through verify, in child processes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

EXIT_ERROR = 2


def _error(message: str) -> int:
    click.echo(f"tpulint: error: {message}", err=True)
    return EXIT_ERROR


def run_prove(
    target: str,
    paths: list[str],
    *,
    apply: bool,
    load: Callable[..., Any],
    select: Any,
    extend_select: Any,
    ignore: Any,
    unsafe_fixes: bool | None,
    output_format: str | None,
    config_file: str | None,
    force_exclude: bool | None,
    quiet: int,
    verbose: bool,
    **_: Any,
) -> int:
    """Check the options, prove the rewrites of TARGET's files, print the report; the exit
    status (0: every unsafe rewrite proven and applied, 1: some refused or not written, 2: it
    could not run)."""
    if paths:
        return _error(
            "--prove works on the files of TARGET (its module and DataModule); give no PATHS"
        )
    if not unsafe_fixes:
        return _error("--prove checks unsafe fixes: add --unsafe-fixes")
    if output_format not in (None, "text", "json"):
        return _error("--prove prints text or json (--output-format)")
    from tpulint.runtime.environment import check_installation, detect_backend
    from tpulint.runtime.errors import VerifyError
    from tpulint.runtime.spec import TargetRef

    try:
        ref = TargetRef.parse(target)
        check_installation(detect_backend())
    except VerifyError as exc:
        return _error(f"--prove: {exc.message}")
    files = [ref.location] if ref.kind == "file" else []
    config = load(
        files, config_file, select, extend_select, ignore, True, force_exclude, output_format
    )
    from tpulint.runtime.api import _target_files
    from tpulint.runtime.prove import prove

    try:
        configs = {path: config for path in _target_files([ref], _cwd())}
    except VerifyError as exc:
        return _error(f"--prove: {exc.message}")
    if not (quiet or output_format == "json") and sys.stderr.isatty():
        click.echo(
            f"tpulint: proving the rewrites of {target} (this trains it several times, about 20 s"
            " each on 8 emulated cores)...",
            err=True,
        )
    report = prove(target, configs=configs, apply=apply)
    if report.error:
        if output_format == "json":
            click.echo(report.to_json_text())
        return _error(f"--prove: {report.error}")
    if output_format == "json":
        click.echo(report.to_json_text())
    elif quiet < 2:
        click.echo(report.render(), nl=False)
    return report.exit_code


def _cwd() -> str:
    import os

    return os.getcwd()
