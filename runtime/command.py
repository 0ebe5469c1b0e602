"""`tpulint verify`: the click command. Registered lazily by tpulint/cli.py.

At import time this module imports only click and the standard library, so `tpulint --help`
stays fast and works without torch; everything else is imported when the command runs.
Exit status: 0 pass, 1 fail, 2 could not run (one `tpulint: error: ...` line on stderr).
"""

from __future__ import annotations

import sys

import click

# The defaults live in tpulint.runtime.api; they are repeated in the help text only
# (tests/runtime/test_command.py keeps the two in step).
_HELP = """Train TARGET under XLA data parallelism and prove that every core got its own,
equal share of the data and that the compile count stops growing after warm-up.

TARGET is `package.module:Class` or `path/to/file.py:Class` (a LightningModule class, an
instance, or a zero-argument factory function). On a TPU VM the real cores are used; anywhere
else N cores are emulated with PJRT CPU.

To verify the run you launch, pass its Trainer arguments (--trainer-args) or its LightningCLI
config files (--config, as after `main.py fit`); TARGET may then be left out when the
config's `model:` has a class_path. Verify's own settings (accelerator, devices, strategy,
run length, logging and checkpoints) win where they conflict; the report lists what it
overrode and why.

\b
Exit status: 0 pass, 1 fail, 2 could not run.
"""


def _fail(message: str, detail: str | None = None, verbose: bool = False) -> None:
    click.echo(f"tpulint: error: {message}", err=True)
    if verbose and detail:
        click.echo(detail.rstrip(), err=True)
    sys.exit(2)


def _batch_multiple(value: int | None, verbose: bool) -> int:
    if value is not None:
        if value < 1:
            _fail(f"--batch-multiple must be at least 1, got {value}")
        return value
    from tpulint.config.settings import ConfigError, load_config

    try:
        return load_config().batch_multiple
    except ConfigError as exc:
        _fail(str(exc), verbose=verbose)
    return 8  # unreachable: _fail exits


@click.command("verify", help=_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target", required=False)
@click.option(
    "--cores",
    type=int,
    default=None,
    help="XLA cores to train on [default: all TPU cores on a TPU VM, 8 emulated]",
)
@click.option(
    "--steps",
    type=int,
    default=None,
    help="Training steps per epoch, at most (shorter epochs run whole) [default: 32]",
)
@click.option(
    "--warmup",
    type=int,
    default=None,
    help="Steps at the start whose compiles are expected [default: 2]",
)
@click.option(
    "--epochs",
    type=int,
    default=None,
    help="Epochs to train, at least: up to 3 more while the last ones still compile new graphs"
    " [default: 3]",
)
@click.option(
    "--datamodule",
    metavar="MODULE:CLASS",
    help="A LightningDataModule to train with (same forms as TARGET)",
)
@click.option(
    "--init-args", metavar="JSON", help="Keyword arguments for the target, as a JSON object"
)
@click.option(
    "--datamodule-args",
    metavar="JSON",
    help="Keyword arguments for the DataModule, as a JSON object",
)
@click.option(
    "--trainer-args",
    metavar="JSON",
    help="Keyword arguments for the Trainer, as a JSON object (e.g. accumulate_grad_batches,"
    " precision, gradient_clip_val)",
)
@click.option(
    "--config",
    "configs",
    metavar="FILE",
    multiple=True,
    help="A LightningCLI config file (model:, data:, trainer:), as given to `main.py fit"
    " --config`; repeat to merge several in order",
)
@click.option(
    "--test",
    "run_test",
    is_flag=True,
    help="Also run the test loop (test_step, test_dataloader) after training, and judge it",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout")
@click.option(
    "--compare",
    is_flag=True,
    help="Also verify the `tpulint fix --unsafe-fixes` output of the target's file and show both",
)
@click.option(
    "--tpu-type",
    metavar="TYPE",
    help="Judge the step's estimated memory per core against this TPU type's HBM: v2, v3, v4,"
    " v5e, v5p, v6e (also as v5e-8, v5litepod-16)",
)
@click.option(
    "--hbm",
    metavar="SIZE",
    help="Judge the step's estimated memory per core against SIZE (16GiB, 512MiB, bytes)",
)
@click.option(
    "--batch-multiple",
    type=int,
    default=None,
    help="Per-core batch multiple to expect [default: [tool.tpulint] batch-multiple, else 8]",
)
@click.option(
    "--timeout", type=float, default=None, help="Seconds before a run counts as hung [default: 600]"
)
@click.option(
    "-v", "--verbose", is_flag=True, help="Show the child's output, tracebacks and every cause"
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict line")
def verify_command(
    target: str | None,
    cores: int | None,
    steps: int | None,
    warmup: int | None,
    epochs: int | None,
    datamodule: str | None,
    init_args: str | None,
    datamodule_args: str | None,
    trainer_args: str | None,
    configs: tuple[str, ...],
    run_test: bool,
    as_json: bool,
    compare: bool,
    tpu_type: str | None,
    hbm: str | None,
    batch_multiple: int | None,
    timeout: float | None,
    verbose: bool,
    quiet: bool,
) -> None:
    from tpulint.runtime import api
    from tpulint.runtime.judge.render import compare_summary, render, render_compare

    options = {
        "cores": cores,
        "datamodule": datamodule,
        "init_args": init_args,
        "datamodule_args": datamodule_args,
        "trainer_args": trainer_args,
        "config": list(configs),
        "batch_multiple": _batch_multiple(batch_multiple, verbose),
    }
    if tpu_type is not None:
        options["tpu_type"] = tpu_type
    if hbm is not None:
        options["hbm"] = hbm
    if run_test:
        options["test"] = True
    for name, value in (
        ("steps", steps),
        ("warmup", warmup),
        ("epochs", epochs),
        ("timeout", timeout),
    ):
        if value is not None:
            options[name] = value
    if not (quiet or as_json) and sys.stderr.isatty():
        what = target or " ".join(f"--config {c}" for c in configs)
        click.echo(
            f"tpulint: verifying {what} (this trains the module; about 20 s for a small"
            " one on 8 emulated cores)...",
            err=True,
        )

    result = api.compare(target, **options) if compare else api.verify(target, **options)
    reports = [result.original, result.fixed] if compare else [result]  # type: ignore[union-attr]
    errors = [r for r in reports if r.error]
    if as_json:
        click.echo(result.to_json_text())
    elif errors:
        pass  # one line on stderr, below
    elif quiet:
        summary = compare_summary(result) if compare else result.summary  # type: ignore[union-attr,arg-type]
        click.echo(f"verdict: {result.verdict.upper()} (exit {result.exit_code}): {summary}")
    elif compare:
        click.echo(render_compare(result, verbose=verbose), nl=False)  # type: ignore[arg-type]
    else:
        click.echo(render(result, verbose=verbose), nl=False)  # type: ignore[arg-type]
    if errors:
        _fail(errors[0].error or "could not run", errors[0].error_detail, verbose)
    sys.exit(result.exit_code)


if __name__ == "__main__":  # pragma: no cover - `python -m tpulint.runtime.command`
    verify_command()
