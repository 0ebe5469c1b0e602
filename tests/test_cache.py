"""The result cache: bad entries are misses that get rewritten, and the key covers the code of
tpulint and its rules, not only the version."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import tpulint
from tests.helpers import LEGACY_TRAINER, UNREADY_MODULE, make_project, run_subprocess
from tpulint.runner.cache import code_fingerprint

REPO = Path(__file__).resolve().parent.parent


def _store(root: Path, name: str) -> Path:
    [path] = (root / ".tpulint_cache").glob(f"*/{name}")
    return path


def _results_file(root: Path) -> Path:
    [path] = [p for p in (root / ".tpulint_cache").glob("*/*.json") if p.name != "scans.json"]
    return path


def test_entries_of_the_wrong_shape_are_misses_and_are_rewritten(tmp_path: Path) -> None:
    files = {f"m{i}.py": (UNREADY_MODULE if i % 2 else LEGACY_TRAINER) for i in range(6)}
    root = make_project(tmp_path / "p", files)
    first = run_subprocess(["check", ".", "-v", "-j", "1"], root)
    assert "(0 from cache, 6 analysed, " in first.stderr
    results = _results_file(root)
    data = json.loads(results.read_text())
    bad_values = [
        {"oops": 1},
        [{"code": 3}],
        [
            {
                "code": "TPU001",
                "name": "x",
                "message": "m",
                "path": "m0.py",
                "severity": "error",
                "start": {"line": "3", "column": 1},
                "end": {"line": 3, "column": 2},
            }
        ],
        "not a list",
    ]
    keys = sorted(data["entries"])
    for key, value in zip(keys[:4], bad_values, strict=True):
        data["entries"][key]["v"] = value
    data["entries"][keys[4]] = ["not", "an", "entry"]
    results.write_text(json.dumps(data))
    scans = _store(root, "scans.json")
    scan_data = json.loads(scans.read_text())
    for key in scan_data["entries"]:
        scan_data["entries"][key]["v"] = {"module": 1}
    scans.write_text(json.dumps(scan_data))

    second = run_subprocess(["check", ".", "-v", "-j", "1"], root)
    assert second.stdout == first.stdout
    assert second.exit_code == 1
    assert "(1 from cache, 5 analysed, " in second.stderr
    third = run_subprocess(["check", ".", "-v", "-j", "1"], root)
    assert third.stdout == first.stdout
    assert "(6 from cache, 0 analysed, " in third.stderr


def test_a_cache_file_of_the_wrong_shape_is_replaced(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    first = run_subprocess(["check", "."], root)
    for value in ("[1, 2]", '{"version": 3}', '"text"', "null"):
        _results_file(root).write_text(value)
        _store(root, "scans.json").write_text(value)
        again = run_subprocess(["check", ".", "-v"], root)
        assert (again.exit_code, again.stdout) == (1, first.stdout)
        assert "(0 from cache, 1 analysed, " in again.stderr
    assert "(1 from cache" in run_subprocess(["check", ".", "-v"], root).stderr


def test_the_cache_key_covers_the_code_of_tpulint_and_its_rules(tmp_path: Path) -> None:
    """An installed copy of tpulint (rules inside, as a wheel lays them out) run from a
    project: editing a rule there invalidates the cached results."""
    install = tmp_path / "site"
    shutil.copytree(
        REPO / "tpulint", install / "tpulint", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(
        REPO / "rules", install / "tpulint" / "rules", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = {"PYTHONPATH": str(install), "PYTHONDONTWRITEBYTECODE": "1"}
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    first = run_subprocess(["check", ".", "-v"], root, env=env)
    assert "(0 from cache, 1 analysed, " in first.stderr, first.stderr
    assert "removed in Lightning 2.0" in first.stdout
    warm = run_subprocess(["check", ".", "-v"], root, env=env)
    assert "(1 from cache, 0 analysed, " in warm.stderr
    rule = install / "tpulint" / "rules" / "trainer_config" / "legacy_tpu_cores.py"
    text = rule.read_text()
    assert text.count("was removed in Lightning 2.0") >= 1
    rule.write_text(text.replace("was removed in Lightning 2.0", "is gone since Lightning 2.0"))
    edited = run_subprocess(["check", ".", "-v"], root, env=env)
    assert "(0 from cache, 1 analysed, " in edited.stderr, edited.stderr
    assert "is gone since Lightning 2.0" in edited.stdout


def test_code_fingerprint_looks_at_the_rules_without_importing_them() -> None:
    code = (
        "import sys\nfrom tpulint.runner.cache import code_fingerprint\n"
        "print(code_fingerprint())\nprint('tpulint.rules' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    fingerprint, imported = done.stdout.split()
    assert fingerprint == code_fingerprint()
    assert fingerprint.startswith(f"{tpulint.__version__}-") and imported == "False"


def test_package_listing_follows_files_added_and_removed(tmp_path: Path) -> None:
    """The context listing of a package is cached with its folders' modification times: a file
    added or removed is seen, and a folder changed moments ago is not cached at all."""
    import os

    from tpulint.config.settings import Config
    from tpulint.runner.cache import ListingCache
    from tpulint.runner.project_build import _package_files

    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py"):
        (package / name).write_text("x = 1\n")
    listings = ListingCache(tmp_path / ".cache")
    config = Config()
    first = _package_files(str(package), config, listings)
    assert sorted(os.path.basename(p) for p in first) == [
        "__init__.py",
        "__init__.py",
        "a.py",
        "b.py",
    ]
    assert listings.get(str(package), list(config.exclude)) is None  # just changed: not kept

    old = 1_000_000_000_000_000_000  # 2001: settled
    for folder in (package, package / "sub"):
        os.utime(folder, ns=(old, old))
    _package_files(str(package), config, listings)
    assert listings.get(str(package), list(config.exclude)) is not None  # kept

    (package / "sub" / "c.py").write_text("y = 2\n")  # the folder's time moves on
    after = _package_files(str(package), config, listings)
    assert any(p.endswith("c.py") for p in after)
    os.utime(package / "sub", ns=(old, old))
    (package / "a.py").unlink()
    assert not any(p.endswith("a.py") for p in _package_files(str(package), config, listings))


def test_cached_results_follow_who_imports_and_calls_a_file(tmp_path: Path) -> None:
    """A file's cached findings depend on other files: whether Lightning code imports it
    (TPU505's samplers) and who calls its functions with which arguments (TPU006's device
    defaults). A warm run sees a change made in another file."""
    from tests.helpers import run_cli

    sampler = (
        "import torch.distributed as dist\nfrom torch.utils.data import Sampler\n\n\n"
        "class ShardSampler(Sampler):\n"
        "    def __init__(self, size):\n"
        "        self.size, self.rank = size, dist.get_rank()\n"
    )
    helper = (
        "import torch\n\n\ndef embed(t, device='cuda'):\n"
        "    return torch.arange(8).to(device) * t\n"
    )
    module = (
        "import lightning as L\n\nfrom pkg.helper import embed\n{extra}\n\n"
        "class LM(L.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        return self(embed(batch{arg})).sum()\n"
    )
    root = make_project(
        tmp_path / "p",
        {
            "pkg/__init__.py": "",
            "pkg/samplers.py": sampler,
            "pkg/helper.py": helper,
            "pkg/model.py": module.format(extra="", arg=", device=batch.device"),
        },
        pyproject='select = ["TPU505", "TPU006"]\npreview = true\n',
    )

    def codes() -> list[tuple[str, str]]:
        out = run_cli(["check", "."], root).stdout.splitlines()
        return sorted((line.split(":")[0], line.split()[1]) for line in out if ": TPU" in line)

    assert codes() == []
    assert codes() == []  # warm
    (root / "pkg/model.py").write_text(
        module.format(extra="from pkg.samplers import ShardSampler\n", arg="")
    )
    assert codes() == [("pkg/helper.py", "TPU006"), ("pkg/samplers.py", "TPU505")]


def test_cached_results_follow_the_text_files_the_scope_reads(tmp_path: Path) -> None:
    """The default scope reads more than Python and YAML: a class of a module whose names are
    looked up at run time that only a shell script names (`python train.py --block Probe`)
    may be built. A warm run sees a script added,
    changed or removed, though no source changed."""
    from tests.helpers import run_cli

    parts = (
        "import torch\n\n\n"
        "class Stem(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x[x > 0]\n\n\n"
        "class Probe(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x[x > 0]\n"
    )
    # The block is looked up by name (`getattr(parts, block)`): any class of `parts` a text
    # file spells may be the one built.
    model = (
        "import lightning as L\n\nfrom kit import parts\nfrom kit.parts import Stem\n\n\n"
        "class Net(L.LightningModule):\n"
        '    def __init__(self, block="Stem"):\n'
        "        super().__init__()\n"
        "        self.stem = Stem()\n"
        "        self.block = getattr(parts, block)()\n\n"
        "    def training_step(self, batch, i):\n"
        "        return self.stem(batch).sum()\n"
    )
    train = (
        "import lightning as L\n\nfrom kit.model import Net\n\n"
        'if __name__ == "__main__":\n'
        "    L.Trainer().fit(Net())\n"
    )
    root = make_project(
        tmp_path / "p",
        {"train.py": train, "kit/__init__.py": "", "kit/model.py": model, "kit/parts.py": parts},
        pyproject='select = ["TPU202"]\n',
    )

    def lines() -> list[int]:
        out = run_cli(["check", "."], root).stdout.splitlines()
        return sorted(int(line.split(":")[1]) for line in out if "kit/parts.py" in line)

    assert lines() == [6]  # Probe: nothing builds it
    assert lines() == [6]  # warm
    script = root / "run.sh"
    script.write_text("python train.py --block Probe\n")
    assert lines() == [6, 11]  # a shell script names it: it may be built
    script.write_text("python train.py --block Stem\n")
    assert lines() == [6]
    script.unlink()
    assert lines() == [6]
