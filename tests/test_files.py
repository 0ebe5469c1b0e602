"""Bad input never crashes a run: syntax errors, encodings, vanished files, symlink loops,
.gitignore and excludes, and `fix --apply` never overwrites a file that changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import (
    CLEAN_MODULE,
    LEGACY_TRAINER,
    UNREADY_MODULE,
    make_project,
    run_cli,
    run_subprocess,
)
from tests.unprivileged import run_unprivileged, shared_folder, unprivileged
from tpulint.config.settings import Config
from tpulint.engine.source import check_source
from tpulint.runner.discovery import SourcePath, discover, read_source
from tpulint.runner.paths import write_if_unchanged


def codes_by_path(stdout: str) -> list[tuple[str, str]]:
    out = []
    for line in stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 3 and parts[3].strip()[:3] in ("TPU", "TPL"):
            out.append((parts[0], parts[3].split()[0]))
    return out


def test_syntax_error_is_a_finding_and_the_run_goes_on(tmp_path: Path) -> None:
    broken = "def training_step(self, batch batch_idx):\n    return batch.sum().item()\n"
    root = make_project(tmp_path / "p", {"bad.py": broken, "train.py": LEGACY_TRAINER})
    result = run_cli(["check", "."], root)
    assert result.exit_code == 1
    assert codes_by_path(result.stdout) == [("bad.py", "TPL002"), ("train.py", "TPU001")]
    assert "bad.py:1:" in result.stdout and "Not valid Python" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_a_file_python_cannot_parse_is_reported_whatever_the_screens_skip(
    tmp_path: Path,
) -> None:
    """No rule can fire in these files (no Lightning or torch text), so none is parsed with
    libcst; a file Python cannot parse is still reported (TPL002), from `ast`'s verdict,
    by the CLI, a real subprocess, the cache's warm run and the API."""
    files = {"notes.py": "Some notes, not code.\n", "nul.py": "x = 1\n\0\n", "ok.py": "x = 1\n"}
    root = make_project(tmp_path / "p", files)
    result = run_cli(["check", "."], root)
    assert result.exit_code == 1
    assert codes_by_path(result.stdout) == [("notes.py", "TPL002"), ("nul.py", "TPL002")]
    assert "notes.py:1:6: TPL002 Not valid Python, not checked: invalid syntax" in result.stdout
    assert "null bytes" in result.stdout
    for _ in range(2):  # cold, then from the cache
        done = run_subprocess(["check", "notes.py"], root)
        assert done.exit_code == 1 and "All checks passed" not in done.stdout
        assert "notes.py:1:6: TPL002" in done.stdout
    assert [d.code for d in check_source(files["notes.py"], "notes.py")] == ["TPL002"]
    assert check_source(files["ok.py"], "ok.py") == []


def test_fix_never_touches_a_file_that_does_not_parse(tmp_path: Path) -> None:
    text = "import lightning as L\ntrainer = L.Trainer(tpu_cores=8\n"
    root = make_project(tmp_path / "p", {"bad.py": text})
    run_cli(["fix", ".", "--apply"], root)
    assert (root / "bad.py").read_text() == text


def test_undecodable_file(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    (root / "latin.py").write_bytes(b"# caf\xe9\nx = 1\n")
    result = run_cli(["check", "."], root)
    assert ("latin.py", "TPL003") in codes_by_path(result.stdout)
    assert "not valid UTF-8" in result.stdout
    assert ("train.py", "TPU001") in codes_by_path(result.stdout)


def test_coding_cookie_is_honoured(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {})
    source = "# -*- coding: latin-1 -*-\n# café\n" + LEGACY_TRAINER
    (root / "legacy.py").write_bytes(source.encode("latin-1"))
    result = run_cli(["fix", ".", "--apply"], root)
    assert "Fixed 1 finding" in result.stderr
    data = (root / "legacy.py").read_bytes()
    assert data.decode("latin-1").startswith("# -*- coding: latin-1 -*-\n# café\n")
    assert b'accelerator="tpu"' in data


def test_bom_and_crlf_are_kept(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {})
    source = LEGACY_TRAINER.replace("\n", "\r\n")
    (root / "train.py").write_bytes(b"\xef\xbb\xbf" + source.encode())
    run_cli(["fix", ".", "--apply"], root)
    data = (root / "train.py").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert b"devices=8" in data


def test_vanished_file(tmp_path: Path) -> None:
    gone = SourcePath("gone.py", tmp_path / "gone.py")
    text, problem = read_source(gone)
    assert text is None and problem is not None
    assert problem.code == "TPL003" and "vanished" in problem.message


def test_symlink_loop_and_broken_link(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"pkg/train.py": LEGACY_TRAINER})
    os.symlink(root / "pkg", root / "pkg" / "loop")
    os.symlink(root / "missing.py", root / "pkg" / "dangling.py")
    result = run_cli(["check", "."], root)
    pairs = codes_by_path(result.stdout)
    assert ("pkg/train.py", "TPU001") in pairs
    assert ("pkg/loop", "TPL003") in pairs and "symlink loop" in result.stdout
    assert ("pkg/dangling.py", "TPL003") in pairs
    assert pairs.count(("pkg/train.py", "TPU001")) == 1


def test_gitignore_and_default_excludes(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {
            "src/train.py": LEGACY_TRAINER,
            "generated/train.py": LEGACY_TRAINER,
            "src/keep_me.py": LEGACY_TRAINER,
            "src/scratch_a.py": LEGACY_TRAINER,
            ".venv/lib/site.py": LEGACY_TRAINER,
            "build/lib/train.py": LEGACY_TRAINER,
            "notes/deep/train.py": LEGACY_TRAINER,
        },
    )
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("generated/\nscratch_*.py\n/notes/deep\n")
    (root / "src" / ".gitignore").write_text("!scratch_a.py\n")
    result = run_cli(["check", "."], root)
    paths = sorted({p for p, _ in codes_by_path(result.stdout)})
    assert paths == ["src/keep_me.py", "src/scratch_a.py", "src/train.py"]


def test_excludes_and_explicit_files(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {
            "src/train.py": LEGACY_TRAINER,
            "legacy/old.py": LEGACY_TRAINER,
            "src/gen_pb2.py": LEGACY_TRAINER,
        },
        pyproject='extend-exclude = ["legacy", "*_pb2.py"]\n',
    )
    walked = run_cli(["check", "."], root)
    assert sorted({p for p, _ in codes_by_path(walked.stdout)}) == ["src/train.py"]
    # A file named on the command line is checked even if excluded...
    explicit = run_cli(["check", "legacy/old.py"], root)
    assert codes_by_path(explicit.stdout) == [("legacy/old.py", "TPU001")]
    # ...unless --force-exclude (what the pre-commit hook passes).
    forced = run_cli(["check", "legacy/old.py", "--force-exclude"], root)
    assert forced.exit_code == 0 and codes_by_path(forced.stdout) == []
    # A folder named on the command line is walked even if its name is excluded.
    folder = run_cli(["check", "legacy"], root)
    assert codes_by_path(folder.stdout) == [("legacy/old.py", "TPU001")]


def test_discover_orders_and_deduplicates(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"a/x.py": CLEAN_MODULE, "b/y.py": CLEAN_MODULE})
    notices: list[str] = []
    files, problems = discover(["a", "a/x.py", "b"], Config(root=root), cwd=root, notices=notices)
    assert [f.display for f in files] == ["a/x.py", "b/y.py"]
    assert problems == [] and notices == []


def test_write_if_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("old\n")
    assert write_if_unchanged(path, "old\n", "new\n") is None
    assert path.read_text() == "new\n"
    # Someone edited the file after tpulint read it: nothing is written.
    path.write_text("edited by the user\n")
    error = write_if_unchanged(path, "new\n", "newer\n")
    assert error == "not written: the file changed on disk since tpulint read it"
    assert path.read_text() == "edited by the user\n"


def test_fix_apply_skips_files_changed_during_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tpulint.runner.paths as runner

    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    real = runner.write_if_unchanged

    def edit_then_write(path: Path, original: str, new: str) -> str | None:
        path.write_text(original + "# a concurrent edit\n")
        return real(path, original, new)

    monkeypatch.setattr(runner, "write_if_unchanged", edit_then_write)
    result = run_cli(["fix", ".", "--apply", "--no-cache"], root)
    assert result.exit_code == 1
    assert "train.py: not written: the file changed on disk since tpulint read it" in result.stderr
    assert (root / "train.py").read_text() == LEGACY_TRAINER + "# a concurrent edit\n"


def test_yaml_config_is_checked_when_named(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {"config.yaml": "trainer:\n  tpu_cores: 8\n", "m.py": UNREADY_MODULE},
        pyproject='select = ["TPU001"]\n',
    )
    named = run_cli(["check", "config.yaml"], root)
    assert codes_by_path(named.stdout) == [("config.yaml", "TPU001")]
    run_cli(["fix", "config.yaml", "--apply"], root)
    assert (root / "config.yaml").read_text() == "trainer:\n  accelerator: tpu\n  devices: 8\n"


def test_walked_yaml_configs_are_checked_when_they_ask_for_tpus(tmp_path: Path) -> None:
    """A folder's LightningCLI configs are checked when a Trainer section asks for TPUs or
    leaves the accelerator to `auto` (the project's TPU launch on a TPU VM); other YAML (GPU
    configs, DDP ones, Hydra configs, CI, data) only when named, excluded ones never."""
    gpu = "trainer:\n  accelerator: gpu\n  tpu_cores: null\n  replace_sampler_ddp: false\n"
    root = make_project(
        tmp_path / "p",
        {
            "configs/tpu.yaml": "model:\n  lr: 0.1\ntrainer:\n  tpu_cores: 8\n",
            "configs/fit.yml": "fit:\n  trainer:\n    accelerator: tpu\n    tpu_cores: 8\n",
            "configs/gpu.yaml": gpu,
            # No accelerator: `auto`, the TPU on a TPU VM.
            "configs/auto.yaml": "model:\n  lr: 0.1\ntrainer:\n  max_epochs: 3\n"
            "  detect_anomaly: true\n",
            "configs/ddp.yaml": "trainer:\n  strategy: ddp\n  detect_anomaly: true\n",
            "ci.yaml": "jobs:\n  test:\n    runs-on: ubuntu-latest\n",
            # A Hydra overlay for a torch_xla script that ignores its `trainer:` section.
            "configs/experiment/xla.yaml": "# @package _global_\ndefaults:\n  - override /model: "
            "small\ntrainer:\n  accelerator: tpu\n  tpu_cores: 8\n",
            "old/tpu.yaml": "trainer:\n  tpu_cores: 8\n",
            "m.py": UNREADY_MODULE,
        },
        pyproject='select = ["TPU001", "TPU002", "TPU009"]\nextend-exclude = ["old"]\n',
    )
    walked = run_cli(["check", ".", "--no-cache"], root)
    assert codes_by_path(walked.stdout) == [
        ("configs/auto.yaml", "TPU009"),
        ("configs/fit.yml", "TPU001"),
        ("configs/tpu.yaml", "TPU001"),
    ]
    named = run_cli(["check", "configs/gpu.yaml", "--no-cache"], root)
    assert codes_by_path(named.stdout) == [
        ("configs/gpu.yaml", "TPU001"),
        ("configs/gpu.yaml", "TPU002"),
    ]


# A Hydra Trainer config group (the lightning-hydra-template layout): each file is the
# Trainer `hydra.utils.instantiate(cfg.trainer)` builds, its keys the Trainer's arguments.
HYDRA_TRAINER_GROUP = {
    "configs/trainer/default.yaml": "_target_: lightning.pytorch.trainer.Trainer\n"
    "max_epochs: 10\naccelerator: cpu\ndevices: 1\nprecision: 16-mixed\n",
    # Its own `_target_`: the removed `tpu_cores` (TPU001, fixed in place), 16-bit on TPUs
    # (TPU004).
    "configs/trainer/tpu.yaml": "_target_: pytorch_lightning.Trainer\n\n"
    "tpu_cores: 8  # a v3-8\nprecision: 16\nmax_epochs: 3\n",
    # A Trainer through `defaults:`: `devices: 8` with `accelerator: tpu` (TPU007) and
    # `bf16-mixed` (TPU004); the inherited `precision` is overridden, never reported.
    "configs/trainer/tpu_pod.yaml": "defaults:\n  - default\n\naccelerator: tpu\n"
    "devices: 8\nprecision: bf16-mixed\n",
    # GPU and CPU Trainers (`ddp` inherits `accelerator: cpu`): nothing for TPUs.
    "configs/trainer/gpu.yaml": "defaults:\n  - default\naccelerator: gpu\ndevices: 8\n"
    "precision: 16-mixed\nstrategy: ddp\n",
    "configs/trainer/ddp.yaml": "defaults:\n  - default.yaml\nstrategy: ddp\n",
    # A Hydra config of another class, and a `_global_` experiment: not a Trainer file.
    "configs/model/net.yaml": "_target_: pkg.Net\ntpu_cores: 8\n",
    "configs/experiment/xla.yaml": "# @package _global_\n_target_: lightning.Trainer\n"
    "tpu_cores: 8\n",
    "m.py": UNREADY_MODULE,
}


def test_hydra_trainer_group_files_are_trainer_arguments(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        HYDRA_TRAINER_GROUP,
        pyproject='select = ["TPU001", "TPU003", "TPU004", "TPU007"]\n',
    )
    walked = run_subprocess(["check", ".", "--no-cache"], root)
    assert walked.exit_code == 1, walked.stderr
    assert codes_by_path(walked.stdout) == [
        ("configs/trainer/tpu.yaml", "TPU001"),
        ("configs/trainer/tpu.yaml", "TPU004"),
        ("configs/trainer/tpu_pod.yaml", "TPU007"),
        ("configs/trainer/tpu_pod.yaml", "TPU004"),
    ]
    assert "configs/trainer/tpu.yaml:3:1: TPU001 [*] `tpu_cores` was removed" in walked.stdout
    assert "configs/trainer/tpu_pod.yaml:6:12: TPU004 `precision: bf16-mixed`" in walked.stdout
    # Named, the GPU/CPU Trainers and the other configs still give nothing.
    others = [
        "configs/trainer/gpu.yaml",
        "configs/trainer/ddp.yaml",
        "configs/trainer/default.yaml",
        "configs/model/net.yaml",
        "configs/experiment/xla.yaml",
    ]
    named = run_subprocess(["check", *others, "--no-cache"], root)
    assert (named.exit_code, codes_by_path(named.stdout)) == (0, []), named.stdout
    fixed = run_subprocess(["fix", "configs/trainer/tpu.yaml", "--apply", "--no-cache"], root)
    assert fixed.exit_code == 1, fixed.stdout + fixed.stderr
    assert (root / "configs/trainer/tpu.yaml").read_text() == (
        "_target_: pytorch_lightning.Trainer\n\n"
        "accelerator: tpu\ndevices: 8  # a v3-8\nprecision: 16\nmax_epochs: 3\n"
    )


def test_parallel_and_serial_runs_agree(tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": (UNREADY_MODULE if i % 2 else LEGACY_TRAINER) for i in range(24)}
    root = make_project(tmp_path / "p", files)
    serial = run_cli(["check", ".", "-j", "1", "--no-cache"], root)
    parallel = run_cli(["check", ".", "-j", "2", "--no-cache"], root)
    assert serial.stdout == parallel.stdout
    assert len(codes_by_path(serial.stdout)) == 12 * 2 + 12


def test_unreadable_file_and_folder() -> None:
    """Files and folders the user may not read (as `nobody` when the tests run as root, which
    reads everything) are reported and the run goes on."""
    how = unprivileged()
    if isinstance(how, str):
        pytest.skip(how)
    with shared_folder() as root:
        make_project(root, {"locked.py": LEGACY_TRAINER, "train.py": LEGACY_TRAINER})
        (root / "locked.py").chmod(0o600)
        (root / "private").mkdir()
        (root / "private" / "m.py").write_text(LEGACY_TRAINER)
        (root / "private").chmod(0o700)
        result = run_unprivileged(["check", ".", "--no-cache", "-j", "1"], root)
        assert result.exit_code == 1, result.stderr
        assert "locked.py:1:1: TPL003 Not checked: Permission denied" in result.stdout
        assert "private:1:1: TPL003 Not checked: Permission denied" in result.stdout
        assert ("train.py", "TPU001") in codes_by_path(result.stdout)
        # Named on the command line, an unreadable folder or file is a usage error.
        folder = run_unprivileged(["check", "private"], root)
        assert (folder.exit_code, folder.stdout) == (2, "")
        assert folder.stderr == "tpulint: error: cannot read folder private: Permission denied\n"
        (root / "private").chmod(0o711)  # can pass through, cannot list
        listed = run_unprivileged(["check", "private"], root)
        assert listed.stderr == "tpulint: error: cannot read folder private: Permission denied\n"
        (root / "private").chmod(0o744)  # can list, cannot pass through
        named = run_unprivileged(["check", "private/m.py"], root)
        assert (named.exit_code, named.stderr) == (
            2,
            "tpulint: error: cannot read private/m.py: Permission denied\n",
        )


# Trainer arguments kept in YAML and spread by the code into the Trainer.
SPREAD_TRAINER = {
    "train.py": "import hydra\nimport pytorch_lightning as pl\n\nfrom pkg.model import Net\n\n\n"
    '@hydra.main(config_path="conf", config_name="base")\n'
    "def main(cfg):\n"
    "    trainer = pl.Trainer(logger=False, **cfg.trainer)\n"
    "    trainer.fit(Net())\n"
    "    runner = pl.Trainer(**OmegaConf.to_container(cfg.run.pl_trainer, resolve=True))\n"
    "    runner.fit(Net())\n\n\n"
    'if __name__ == "__main__":\n    main()\n',
    "pkg/__init__.py": "",
    "pkg/model.py": UNREADY_MODULE,
    # The `trainer` group: each file is the Trainer's arguments.
    "conf/trainer/tpu.yaml": "tpu_cores: 8\nprecision: 16\nmax_epochs: 3\n",
    "conf/trainer/gpu.yaml": "gpus: 1\nprecision: 16\n",
    "conf/trainer/default.yaml": "max_epochs: 3\nprecision: 16\n",
    # A primary config with the other spread section nested, and one asking for GPUs.
    "conf/base.yaml": "defaults:\n  - trainer: default\nrun:\n  pl_trainer:\n"
    "    tpu_cores: 1\n    precision: bf16\n  seed: 1\n",
    "conf/base_gpu.yaml": "run:\n  pl_trainer:\n    gpus: 1\n    precision: 16\n",
    # A group that nothing spreads, though it asks for TPUs.
    "conf/model/xla.yaml": "tpu_cores: 8\n",
}


def test_spread_trainer_sections_are_trainer_arguments(tmp_path: Path) -> None:
    """`pl.Trainer(**cfg.trainer)`: the YAML sections the code spreads into a Trainer and
    that ask for TPUs are checked as its arguments; GPU and auto sections, and files no
    spread reaches, are not."""
    root = make_project(tmp_path / "p", SPREAD_TRAINER, pyproject='select = ["TPU001", "TPU004"]\n')
    walked = run_subprocess(["check", ".", "--no-cache"], root)
    assert walked.exit_code == 1, walked.stderr
    assert codes_by_path(walked.stdout) == [
        ("conf/base.yaml", "TPU001"),
        ("conf/base.yaml", "TPU004"),
        ("conf/trainer/tpu.yaml", "TPU001"),
        ("conf/trainer/tpu.yaml", "TPU004"),
    ]
    assert (
        "conf/base.yaml:5:5: TPU001 [*] `tpu_cores` was removed in Lightning 2.0 "
        "(`pl.Trainer(**OmegaConf.to_container(cfg.run.pl_trainer, resolve=True))` passes it "
        "on and the Trainer raises TypeError)"
    ) in walked.stdout
    assert "conf/trainer/tpu.yaml:1:1: TPU001 [*]" in walked.stdout
    # A warm run gives the same; a file that stops spreading the section drops its findings.
    warm = run_subprocess(["check", "."], root)
    assert codes_by_path(warm.stdout) == codes_by_path(walked.stdout)
    script = (root / "train.py").read_text()
    (root / "train.py").write_text(script.replace("**cfg.trainer", "max_epochs=1"))
    again = run_subprocess(["check", "."], root)
    assert codes_by_path(again.stdout) == [
        ("conf/base.yaml", "TPU001"),
        ("conf/base.yaml", "TPU004"),
    ]


def test_trainer_splats_shapes() -> None:
    from tpulint.analysis.trainer_splats import trainer_splats

    text = (
        "import pytorch_lightning as pl\nfrom lightning import Trainer\n\n\n"
        "def main(config, args):\n"
        "    section = config['trainer']['trainer']\n"
        "    pl.Trainer(**section)\n"
        "    Trainer(callbacks=[], **dict(config.lightning))\n"
        "    Trainer(**vars(args))\n"  # argparse Namespace: no section path
        "    Trainer(**self.trainer_kwargs)\n"
        "    Trainer(**kwargs)\n"
    )
    assert trainer_splats(text) == [
        (("trainer", "trainer"), "pl.Trainer(**section)"),
        (("lightning",), "Trainer(**dict(config.lightning))"),
    ]
    assert trainer_splats("Trainer(max_epochs=1)\n") == []


# Shell launchers: the XRT runtime's environment set for the TPU run (TPU008).
XRT_LAUNCHERS = {
    "m.py": UNREADY_MODULE,
    "scripts/train_tpu.sh": "#!/bin/bash\n"
    '# export XRT_TPU_CONFIG="localservice;0;localhost:51011"\n'
    "export TPU_IP_ADDRESS=10.0.0.2  # the TPU node\n"
    'export XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP_ADDRESS:8470"\n'
    'echo "XRT_TPU_CONFIG=unset"\n'
    "XRT_TPU_CONFIG='localservice;0;localhost:51011' python m.py  # noqa: TPU008\n"
    "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python m.py\n",
    # XLA on GPUs through XRT: not a TPU launch.
    "scripts/train_gpu.sh": 'export XRT_WORKERS="localservice:0;grpc://localhost:40934"\n'
    "CUDA_VISIBLE_DEVICES=0 python m.py\n",
    "scripts/pjrt.sh": "export PJRT_DEVICE=TPU\npython m.py\n",
}


def test_shell_launchers_setting_xrt(tmp_path: Path) -> None:
    """A walked shell script that sets the XRT runtime's environment is checked: each setting
    outside comments and quotes is reported, `# noqa` applies; other scripts are not read."""
    root = make_project(tmp_path / "p", XRT_LAUNCHERS, pyproject='select = ["TPU008"]\n')
    walked = run_subprocess(["check", ".", "--no-cache"], root)
    assert walked.exit_code == 1, walked.stderr
    lines = [line for line in walked.stdout.splitlines() if "TPU008" in line]
    assert [line.split(" TPU008")[0] for line in lines] == [
        "scripts/train_tpu.sh:3:8:",
        "scripts/train_tpu.sh:4:8:",
        "scripts/train_tpu.sh:7:12:",
    ]
    assert "remote TPU node it names is never reached" in lines[1]
    assert "(1 file" in walked.stdout or "in 1 file" in walked.stdout
    # Named, a script is checked whatever it sets; --add-noqa writes shell comments.
    named = run_subprocess(["check", "scripts/train_gpu.sh", "--no-cache"], root)
    assert named.exit_code == 0, named.stdout + named.stderr
    added = run_subprocess(["check", "scripts/train_tpu.sh", "--add-noqa", "--no-cache"], root)
    assert added.exit_code == 0, added.stdout + added.stderr
    text = (root / "scripts/train_tpu.sh").read_text()
    assert "export TPU_IP_ADDRESS=10.0.0.2  # the TPU node  # noqa: TPU008\n" in text
    again = run_subprocess(["check", ".", "--no-cache"], root)
    assert again.exit_code == 0, again.stdout
