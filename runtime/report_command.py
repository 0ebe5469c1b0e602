"""`tpulint report DIR`: judge a run the TPUReadiness callback recorded, with verify's judge
and verify's exit codes (0 pass, 1 fail, 2 could not judge). Registered lazily by
tpulint/cli.py; imports click and the standard library only (no torch).
"""

from __future__ import annotations

import sys

import click


@click.command(
    "report",
    help="Judge a run recorded by the TPUReadiness callback (from tpulint.lightning import"
    " TPUReadiness) in DIR, as `tpulint verify` judges its own runs: sharding, compile"
    " stability, transfers, CPU fallbacks, batch geometry, validation, how the run ended."
    " On a pod, gather every host's directory into DIR first.\n\nExit status: 0 pass, 1 fail,"
    " 2 could not judge.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("directory", metavar="DIR")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout")
@click.option("--warmup", type=int, default=None, help="Warm-up steps [default: as recorded, 2]")
@click.option(
    "--batch-multiple",
    type=int,
    default=None,
    help="Per-core batch multiple to expect [default: 8, 16 for bf16]",
)
@click.option("-v", "--verbose", is_flag=True, help="Show every detail (info-level causes)")
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict line")
def report_command(
    directory: str,
    as_json: bool,
    warmup: int | None,
    batch_multiple: int | None,
    verbose: bool,
    quiet: bool,
) -> None:
    from tpulint.runtime.judge.render import partly_judged, render
    from tpulint.runtime.recorded import report_directory

    if warmup is not None and warmup < 0:
        click.echo(f"tpulint: error: --warmup must be at least 0, got {warmup}", err=True)
        sys.exit(2)
    report = report_directory(directory, warmup=warmup, batch_multiple=batch_multiple)
    if as_json:
        click.echo(report.to_json_text())
    elif quiet:
        click.echo(f"verdict: {report.verdict.upper()} (exit {report.exit_code}): {report.summary}")
    elif not report.error or partly_judged(report):
        click.echo(
            render(report, verbose=verbose).replace("tpulint verify", "tpulint report", 1), nl=False
        )
    if report.error and not as_json:
        click.echo(f"tpulint: error: {report.error}", err=True)
    sys.exit(report.exit_code)
