"""What to verify and how: target references and the run specification the parent hands to
the child process (as JSON). Standard library only.
"""

from __future__ import annotations

import json
import keyword
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.errors import VerifyError

# How the child process ends (its exit status); a child killed by a signal has none of these.
EXIT_FINISHED = 0  # training finished
EXIT_COULD_NOT_RUN = 2  # a VerifyError: bad target, ...
EXIT_TRAINING_RAISED = 3  # the user's training raised

TARGET_FORMS = "expected `package.module:Class` or `path/to/file.py:Class`"


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


@dataclass(frozen=True)
class TargetRef:
    """`pkg.module:Name` or `path/to/file.py:Name` (Name may be dotted: `Outer.Inner`)."""

    raw: str
    kind: str  # "module" or "file"
    location: str  # dotted module name, or an absolute file path
    attribute: str

    @classmethod
    def parse(cls, text: str, *, cwd: str | None = None) -> TargetRef:
        # rpartition: a Windows drive (C:\...) or a path with colons keeps its left part whole.
        left, sep, attribute = text.strip().rpartition(":")
        if not sep or not left or not attribute:
            raise VerifyError(f"bad target `{text}`: {TARGET_FORMS}")
        if not all(_is_identifier(part) for part in attribute.split(".")):
            raise VerifyError(f"bad target `{text}`: `{attribute}` is not a Python name")
        if left.endswith(".py") or "/" in left or os.sep in left:
            path = Path(left).expanduser()
            if not path.is_absolute():
                path = Path(cwd or os.getcwd()) / path
            path = Path(os.path.normpath(path))
            if path.is_dir():
                raise VerifyError(f"bad target `{text}`: {_folder_hint(left, path, attribute)}")
            if not path.is_file():
                raise VerifyError(f"bad target `{text}`: no such file: {left}")
            return cls(text, "file", str(path), attribute)
        if not all(_is_identifier(part) for part in left.split(".")):
            raise VerifyError(f"bad target `{text}`: `{left}` is not a module name; {TARGET_FORMS}")
        return cls(text, "module", left, attribute)

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, str]) -> TargetRef:
        return cls(**data)


def _folder_hint(given: str, path: Path, attribute: str) -> str:
    """What to write instead of a folder where a Python file is expected."""
    shown = given.rstrip("/" + os.sep) or given
    if not (path / "__init__.py").is_file():
        return (
            f"{given} is a folder, not a Python file; name the .py file that defines"
            f" `{attribute}` (`{shown}/FILE.py:{attribute}`)"
        )
    relative = Path(shown)
    if relative.is_absolute() or ".." in relative.parts:
        dotted, where = path.name, f", run from {path.parent}"
    else:
        dotted, where = ".".join(relative.parts), ""
    as_module = (
        f"as a module (`{dotted}:{attribute}`{where}) or "
        if all(_is_identifier(part) for part in dotted.split("."))
        else ""
    )
    return (
        f"{given} is a package folder, not a Python file; name it {as_module}by its file"
        f" (`{shown}/__init__.py:{attribute}`)"
    )


@dataclass
class RunSpec:
    """Everything the child needs; written to a JSON file in the run directory."""

    target: TargetRef | None  # None: the model class comes from the --config files
    datamodule: TargetRef | None = None
    init_args: dict[str, Any] = field(default_factory=dict)
    datamodule_args: dict[str, Any] = field(default_factory=dict)
    trainer_args: dict[str, Any] = field(default_factory=dict)  # --trainer-args
    configs: list[str] = field(default_factory=list)  # LightningCLI config files, absolute
    device: str = "CPU"  # Backend.device
    cores: int | None = None  # None: every core the backend has
    # Emulated cores only: [processes, devices per process] of the TPU VM reproduced
    # (--emulate); None: every core a thread of one process.
    layout: list[int] | None = None
    epochs: int = 3
    steps: int | None = None  # training batches per epoch; None: whole epochs
    # How long no core may make progress before the parent looks where they are.
    barrier_timeout: float = 120.0
    run_dir: str = ""
    cwd: str = ""
    # Original file -> file to load in its place (used by --compare for the fixed source).
    overrides: dict[str, str] = field(default_factory=dict)
    # How the run is judged and extended (steady.py): the warm-up steps, the epochs that may
    # be added while no steady window is seen, and until when (seconds into the child).
    warmup: int = 2
    max_extra_epochs: int = 3
    extend_until: float = 300.0
    val_steps: int = 4  # validation batches per validation run, at most
    test: bool = False  # also run the test loop (test_step, test_dataloader) after fitting
    # --compare's equivalence check: {"seed", "dir", "role"} (runtime/child/equivalence.py).
    equivalence: dict[str, Any] | None = None
    # --script: the user's training script (absolute) and its arguments, run as __main__.
    script: str | None = None
    script_args: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["target"] = self.target.to_json() if self.target else None
        data["datamodule"] = self.datamodule.to_json() if self.datamodule else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        data = dict(data)
        if data.get("target"):
            data["target"] = TargetRef.from_json(data["target"])
        if data.get("datamodule"):
            data["datamodule"] = TargetRef.from_json(data["datamodule"])
        return cls(**data)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> RunSpec:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def parse_json_object(
    text: str | dict[str, Any] | None, option: str = "--init-args", example: str = '{"lr": 0.1}'
) -> dict[str, Any]:
    """`--init-args '{"lr": 0.1}'` (and --datamodule-args, --trainer-args): a JSON object of
    keyword arguments. A dict (from the Python API) is taken as it is."""
    if text is None or text == "":
        return {}
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise VerifyError(
                f"{option} is not valid JSON: {exc.msg} (column {exc.colno})"
            ) from None
    else:
        value = text
    if not isinstance(value, dict):
        raise VerifyError(f"{option} must be a JSON object of keyword arguments, e.g. '{example}'")
    bad = [key for key in value if not (isinstance(key, str) and _is_identifier(key))]
    if bad:
        raise VerifyError(f"{option}: `{bad[0]}` is not a keyword argument name")
    return value


def parse_init_args(text: str | dict[str, Any] | None) -> dict[str, Any]:
    """`--init-args '{"lr": 0.1}'`: a JSON object of keyword arguments."""
    return parse_json_object(text, "--init-args")
