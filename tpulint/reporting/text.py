"""`path:line:col: CODE [*] message`, one finding per line (Ruff's concise format)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import click

from tpulint.datatypes.diagnostics import Diagnostic, Severity
from tpulint.reporting.options import ReportOptions

_CODE_COLORS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def fix_marker(diagnostic: Diagnostic, unsafe_fixes: bool) -> str:
    return "[*] " if diagnostic.fixable(unsafe_fixes) else ""


def render_line(diagnostic: Diagnostic, options: ReportOptions) -> str:
    color = options.color
    location = f"{diagnostic.path}:{diagnostic.start.line}:{diagnostic.start.column}:"
    code = diagnostic.code
    if color:
        location = click.style(diagnostic.path, bold=True) + click.style(
            f":{diagnostic.start.line}:{diagnostic.start.column}:", fg="cyan"
        )
        code = click.style(code, fg=_CODE_COLORS[diagnostic.severity], bold=True)
    text = f"{location} {code} {fix_marker(diagnostic, options.unsafe_fixes)}{diagnostic.message}"
    return text + scope_note(diagnostic)


def scope_note(diagnostic: Diagnostic) -> str:
    """` [outside the TPU scope: why]` for a finding shown under `--scope all`."""
    return f" [outside the TPU scope: {diagnostic.scope}]" if diagnostic.scope else ""


def render_text(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    return "".join(render_line(d, options) + "\n" for d in diagnostics)


def render_statistics(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {d.code for d in diagnostics if d.fixable(options.unsafe_fixes)}
    width = max((len(str(n)) for n in counts.values()), default=1)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        marker = "[*]" if code in fixable else "[ ]"
        lines.append(f"{count:>{width}}\t{code}\t{marker} {names[code]}")
    return "".join(line + "\n" for line in lines)


def summary(
    diagnostics: Sequence[Diagnostic],
    options: ReportOptions,
    *,
    fix_command: str = "tpulint fix --apply",
) -> str:
    """The closing lines of a text run: counts, what `tpulint fix` can do, and (last) how
    many findings the scope left out."""
    if not diagnostics:
        return f"All checks passed ({options.files_checked} files checked).\n" + _outside(options)
    files = len({d.path for d in diagnostics})
    noun = "finding" if len(diagnostics) == 1 else "findings"
    lines = [
        f"Found {len(diagnostics)} {noun} in {files} file{'s' if files != 1 else ''}"
        f" ({options.files_checked} checked)."
    ]
    fixable = sum(d.fixable(options.unsafe_fixes) for d in diagnostics)
    hidden = sum(d.fixable(True) and not d.fixable(options.unsafe_fixes) for d in diagnostics)
    if fixable:
        command = fix_command + (" --unsafe-fixes" if options.unsafe_fixes else "")
        lines.append(f"[*] {fixable} fixable with `{command}`.")
    if hidden:
        lines.append(
            f"{hidden} more fix{'es are' if hidden != 1 else ' is'} available with "
            "`--unsafe-fixes` (they may change behaviour: review them with "
            "`tpulint fix --unsafe-fixes`)."
        )
    return "".join(line + "\n" for line in lines) + _outside(options)


def _outside(options: ReportOptions) -> str:
    count = options.outside_scope
    if not count:
        return ""
    noun = "finding" if count == 1 else "findings"
    roots = options.scope_roots
    reach = (
        "code not reached from " + " or ".join(roots)
        if roots
        else "code no training script reaches"
    )
    text = (
        f"{count} more {noun} in code that does not train on a TPU (CUDA-only branches, "
        f"inference and test-only code, {reach}) not shown: `--scope all` shows them.\n"
    )
    if any(root.startswith("the training ") for root in roots):
        text += (
            "With no TPU entry point in its project, the scope follows the scripts that train it "
            "today (on any accelerator): the ones a port moves to the TPU.\n"
        )
    return text
