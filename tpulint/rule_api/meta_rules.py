"""tpulint's own diagnostics (TPLxxx): stale suppressions and files that cannot be checked.

These are not TPU checks and have no visitors: the engine emits them (suppression handling,
file reading, parsing). They are rule classes so that they are documented, listed by
`tpulint rules`, explained by `tpulint explain`, and selectable like any other rule.
"""

from __future__ import annotations

from typing import ClassVar

from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid


class UnusedSuppression(Rule):
    """
    ## What it does
    Finds suppression comments that name tpulint codes which no longer report anything on
    that line: `# noqa: TPU101` or `# tpulint: ignore[TPU101]` where TPU101 does not fire, or
    names a code that does not exist.

    ## Why is this bad on TPU?
    A stale suppression hides the next real problem on that line: if a host sync is added
    there later, it will not be reported. Removing stale suppressions keeps the codebase's
    TPU-readiness honest. Bare `# noqa` comments are never reported, because they may
    silence other linters.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.model(batch)
            return loss  # noqa: TPU101
    ```

    ## Use instead
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.model(batch)
            return loss
    ```

    ## Fix safety
    The fix removes the unused codes from the comment (or the whole comment when nothing
    is left) and is safe: it does not change what runs.

    ## References
    - [Ruff: unused-noqa (RUF100)](https://docs.astral.sh/ruff/rules/unused-noqa/)
    """

    code = "TPL001"
    name = "unused-suppression"
    summary = "Suppression comment for a tpulint code that reports nothing there"
    severity = Severity.INFO
    fix_applicability = Applicability.SAFE
    requires = ("noqa", "tpulint:")
    # Its examples need the TPU rules enabled, to tell used suppressions from unused ones.
    example_selection = ("TPU", "TPL001")
    VALID = (
        Valid("x = 1  # noqa\n"),
        Valid("x = 1  # noqa: E501\n"),
        Valid(
            "import lightning as L\n\n\nclass Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return batch.sum().item()  # noqa: TPU101\n",
        ),
        # A code of a rule that is not enabled is not reported as unused.
        Valid("x = 1  # noqa: TPU101\n", config={"ignore": ["TPU101"]}),
    )
    INVALID = (
        Invalid(
            "x = 1  # noqa: TPU101\n",
            expected_fix="x = 1\n",
        ),
        Invalid(
            "x = 1  # noqa: E501, TPU101\n",
            expected_fix="x = 1  # noqa: E501\n",
        ),
        Invalid(
            "x = 1  # tpulint: ignore[TPU202]  keep this note\n",
            expected_fix="x = 1  # keep this note\n",
        ),
    )


class SyntaxErrorInFile(Rule):
    """
    ## What it does
    Reports a Python file that does not parse, or a YAML config named on the command line
    that is not valid YAML. tpulint cannot check it, and `tpulint fix` never writes to it.

    ## Why is this bad on TPU?
    Nothing TPU-specific: the file cannot be imported on any device, and LightningCLI
    cannot read the config. It is reported so that a check run never passes silently over
    files it could not read.

    ## Example
    ```python
    def training_step(self, batch batch_idx):
        ...
    ```

    ```yaml
    trainer:
      max_epochs: 3
       accelerator: tpu   # indented under nothing: "mapping values are not allowed here"
    ```

    ## Use instead
    ```python
    def training_step(self, batch, batch_idx):
        ...
    ```

    ```yaml
    trainer:
      max_epochs: 3
      accelerator: tpu
    ```

    ## Fix safety
    There is no fix.

    ## References
    - [Python: syntax errors](https://docs.python.org/3/tutorial/errors.html)
    - [YAML 1.2: block mappings](https://yaml.org/spec/1.2.2/#822-block-mappings)
    """

    code = "TPL002"
    name = "syntax-error"
    summary = "File is not valid Python (or YAML, for a config) and was not checked"
    severity = Severity.ERROR
    always_on: ClassVar[bool] = True


class UnreadableFile(Rule):
    """
    ## What it does
    Reports a file that could not be read: not UTF-8, unreadable, removed while tpulint ran,
    or a symlink loop.

    ## Why is this bad on TPU?
    Nothing TPU-specific: the file could not be checked, and a check run should not pass
    silently over it.

    ## Example
    A file saved as Latin-1 that contains `é` in a comment.

    ## Use instead
    Save the file as UTF-8 (or declare its encoding with a PEP 263 coding comment).

    ## Fix safety
    There is no fix.

    ## References
    - [PEP 263: source code encodings](https://peps.python.org/pep-0263/)
    """

    code = "TPL003"
    name = "unreadable-file"
    summary = "File could not be read (encoding, permissions, vanished, symlink loop)"
    severity = Severity.ERROR
    always_on: ClassVar[bool] = True


class UnanalysableFile(Rule):
    """
    ## What it does
    Reports a file that is valid Python but that tpulint could not analyse, and says why:
    libcst (the parser tpulint's rules and fixes run on) rejects code that Python accepts, an
    expression nested deeper than tpulint's parser can follow even on its large stack, memory
    ran out, or analysing the file crashed tpulint's worker process. The other files of the
    run are checked as usual, and `tpulint fix` does not write to this one.

    ## Why is this bad on TPU?
    Nothing TPU-specific: the file was not checked, and a check run should not pass silently
    over it. Generated code (very long expressions or string concatenations) is the usual
    cause; excluding generated files (`extend-exclude`) is the usual remedy.

    ## Example
    A generated module whose single expression concatenates 10,000 string literals.

    ## Use instead
    Exclude generated files, or build long values from a list (`"".join(parts)`).

    ## Fix safety
    There is no fix.

    ## References
    - [libcst](https://libcst.readthedocs.io/)
    """

    code = "TPL004"
    name = "unanalysable-file"
    summary = "Valid Python that tpulint could not analyse (too deeply nested, parser limits)"
    severity = Severity.ERROR
    always_on: ClassVar[bool] = True


class FileTooLarge(Rule):
    """
    ## What it does
    Reports a file larger than `max-file-size` (default 2 MB), which tpulint skips without
    reading it. Analysing a file takes several hundred bytes of memory per byte of source
    (libcst's syntax tree), so one huge generated file could otherwise take gigabytes.

    ## Why is this bad on TPU?
    Nothing TPU-specific: the file was not checked, and a check run should not pass silently
    over it.

    ## Example
    A 40 MB generated module of model weights written as Python literals.

    ## Use instead
    Exclude generated files (`extend-exclude`), or raise the limit for the run
    (`--max-file-size 20MB`) or for the project (`max-file-size = "20MB"` in
    `[tool.tpulint]`); `0` turns the limit off.

    ## Fix safety
    There is no fix.

    ## References
    - [Ruff: excluding files](https://docs.astral.sh/ruff/settings/#extend-exclude)
    """

    code = "TPL005"
    name = "file-too-large"
    summary = "File larger than `max-file-size`, skipped"
    severity = Severity.WARNING
    always_on: ClassVar[bool] = True


META_RULES = (UnusedSuppression, SyntaxErrorInFile, UnreadableFile, UnanalysableFile, FileTooLarge)
