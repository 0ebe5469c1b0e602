"""The separate virtual environments the benchmark installs from PyPI, and tool versions.

Each peer gets its own venv so that each runs with the libcst it declares:
- torchfix: TorchFix pins `libcst<1.6` (so it runs on libcst 1.5.x, an older parser build);
- fixit: Fixit accepts any libcst, so it gets exactly the project's libcst version, the same
  parser tpulint and the floor use;
- tools: matplotlib (the plot) and py-spy / pyinstrument (the profile).
They live under bench/.cache/ (ignored by git); a venv is reused while its requirement list
is unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

TORCHFIX_VERSION = "0.7.0"
FIXIT_VERSION = "2.2.1"


@dataclass(frozen=True)
class Venv:
    name: str
    requirements: tuple[str, ...]

    def path(self, cache: Path) -> Path:
        return cache / f"venv-{self.name}"

    def python(self, cache: Path) -> Path:
        return self.path(cache) / "bin" / "python"

    def bin(self, cache: Path, script: str) -> Path:
        return self.path(cache) / "bin" / script


def venvs() -> dict[str, Venv]:
    project_libcst = version("libcst")
    return {
        "torchfix": Venv("torchfix", (f"torchfix=={TORCHFIX_VERSION}",)),
        "fixit": Venv("fixit", (f"fixit=={FIXIT_VERSION}", f"libcst=={project_libcst}")),
        "tools": Venv("tools", ("matplotlib", "py-spy", "pyinstrument")),
    }


def ensure(venv: Venv, cache: Path, log: Path) -> Path:
    """Create `venv` under `cache` and install its requirements unless already done."""
    target = venv.path(cache)
    marker = target / ".bench-requirements.json"
    wanted = json.dumps(list(venv.requirements))
    if marker.is_file() and marker.read_text(encoding="utf-8") == wanted:
        return target
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        subprocess.run(
            [sys.executable, "-m", "venv", "--clear", str(target)],
            check=True,
            stdout=out,
            stderr=out,
        )
        subprocess.run(
            [str(venv.python(cache)), "-m", "pip", "install", "--quiet", *venv.requirements],
            check=True,
            stdout=out,
            stderr=out,
        )
    marker.write_text(wanted, encoding="utf-8")
    return target


def installed_versions(python: Path, packages: list[str]) -> dict[str, str]:
    """Versions of `packages` as installed for interpreter `python` ("" when absent)."""
    code = (
        "import json, sys\n"
        "from importlib.metadata import version, PackageNotFoundError\n"
        "out = {'python': sys.version.split()[0]}\n"
        f"for p in {packages!r}:\n"
        "    try: out[p] = version(p)\n"
        "    except PackageNotFoundError: out[p] = ''\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return json.loads(result.stdout)
