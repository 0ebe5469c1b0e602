"""Worker processes: a crash is confined to its file, and no worker outlives tpulint however
tpulint dies. Processes are looked for only among the descendants of what the test started."""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tpulint.config.settings import Config
from tpulint.engine import source as engine
from tpulint.runner import paths as runner
from tpulint.runner.pool import Pool

LEGACY = "import lightning as L\nL.Trainer(tpu_cores=8)\n"


def _children(pid: int) -> dict[int, str]:
    """pid -> start time of the live children of `pid` (from /proc)."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            data = Path(f"/proc/{entry.name}/stat").read_bytes()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != b"Z":
            out[int(entry.name)] = fields[19].decode()
    return out


def _alive(pid: int, started: str) -> bool:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[0] != b"Z" and fields[19].decode() == started


def _square_or_crash(item: int) -> int:
    if item == 13:
        faulthandler.disable()  # pytest's traceback dump on SIGSEGV is noise here
        os.kill(os.getpid(), signal.SIGSEGV)
    return item * item


def test_pool_reports_the_item_a_worker_died_on_and_finishes_the_rest() -> None:
    batches = [list(range(0, 10)), list(range(10, 20)), list(range(20, 30))]
    with Pool(2) as pool:
        results = list(pool.map(_square_or_crash, batches, on_crash=lambda item, why: (item, why)))
    crashed = [r for r in results if isinstance(r, tuple)]
    assert crashed == [(13, "killed by SIGSEGV")]
    assert sorted(r for r in results if not isinstance(r, tuple)) == [
        i * i for i in range(30) if i != 13
    ]


def _square_or_raise(item: int) -> int:
    if item == 7:
        raise ValueError("seven")
    return item * item


def test_pool_reports_an_item_that_raised_and_the_worker_goes_on(
    capfd: pytest.CaptureFixture[str],
) -> None:
    batches = [list(range(0, 10)), list(range(10, 20))]
    with Pool(2) as pool:
        results = list(pool.map(_square_or_raise, batches, on_crash=lambda item, why: (item, why)))
        workers = {w.process.pid for w in pool.workers}
    raised = [r for r in results if isinstance(r, tuple)]
    assert len(raised) == 1 and raised[0][0] == 7
    assert raised[0][1].startswith("ValueError: seven (at test_workers.py:")
    assert sorted(r for r in results if not isinstance(r, tuple)) == [
        i * i for i in range(20) if i != 7
    ]
    assert len(workers) == 2  # no worker was replaced
    assert "Traceback" not in capfd.readouterr().err


def test_pool_without_on_crash_raises_for_an_item_that_raised() -> None:
    with Pool(2) as pool, pytest.raises(RuntimeError, match="raised ValueError: seven"):
        list(pool.map(_square_or_raise, [list(range(10)), list(range(10, 20))]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork-based test")
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_the_model_cannot_summarise_is_an_internal_error_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], jobs: int
) -> None:
    from tpulint.analysis import summary
    from tpulint.runner import project_build

    for index in range(8):
        (tmp_path / f"m{index}.py").write_text(LEGACY)
    (tmp_path / "odd.py").write_text(LEGACY)
    real = summary.summarize

    def failing(text, path, module, is_package):
        if path.endswith("odd.py"):
            raise TypeError("a bug")
        return real(text, path, module, is_package)

    monkeypatch.setattr(summary, "summarize", failing)  # inherited by the forked workers
    monkeypatch.setattr(project_build, "PARALLEL_THRESHOLD", 2)
    monkeypatch.chdir(tmp_path)
    run = runner.check_paths(["."], Config(root=tmp_path), use_cache=False, jobs=jobs)
    assert run.internal_errors == [next(e for e in run.internal_errors if e.startswith("odd.py: "))]
    assert (
        "the project model could not summarise it (TypeError: a bug (at "
        in (run.internal_errors[0])
    )
    codes = {(d.path, d.code) for d in run.diagnostics}
    assert {(f"m{i}.py", "TPU001") for i in range(8)} | {("odd.py", "TPU001")} <= codes
    assert "Traceback" not in capfd.readouterr().err


def test_a_summary_failure_through_the_cli_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(LEGACY)
    (tmp_path / "pyproject.toml").write_text("")
    script = (
        "import sys\n"
        "from tpulint.analysis import summary\n"
        "real = summary.summarize\n"
        "def failing(text, path, *args):\n"
        "    if path.endswith('m.py'):\n"
        "        raise TypeError('a bug')\n"
        "    return real(text, path, *args)\n"
        "summary.summarize = failing\n"
        "from tpulint.cli import cli\n"
        "cli(['check', '--no-cache', '.'], prog_name='tpulint')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "tpulint: error: internal error in m.py: the project model could not summarise it" in (
        result.stderr
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork-based test")
def test_a_worker_crash_is_reported_for_its_file_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(8):
        (tmp_path / f"m{index}.py").write_text(LEGACY)
    (tmp_path / "crash.py").write_text(LEGACY)
    real = engine.check_source

    def crashing(text, path, config, **kwargs):
        if path.endswith("crash.py"):
            faulthandler.disable()
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(text, path, config, **kwargs)

    monkeypatch.setattr(engine, "check_source", crashing)  # inherited by the forked workers
    monkeypatch.chdir(tmp_path)
    run = runner.check_paths(["."], Config(root=tmp_path), use_cache=False, jobs=2)
    codes = {(d.path, d.code) for d in run.diagnostics}
    assert ("crash.py", "TPL004") in codes
    assert {(f"m{i}.py", "TPU001") for i in range(8)} <= codes
    crash = next(d for d in run.diagnostics if d.path == "crash.py")
    assert "ended tpulint's worker process (killed by SIGSEGV)" in crash.message
    assert not run.internal_errors


def _busy_project(root: Path) -> None:
    # Files that keep both workers busy for several seconds each (libcst parses long
    # left-nested chains in quadratic time).
    chain = " + ".join(f"a{i}" for i in range(1800))
    module = (
        "import lightning as L\n\n\nclass M(L.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        f"        value = {chain}\n        return batch.sum().item()\n"
    )
    for index in range(6):
        (root / f"slow{index}.py").write_text(module)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_workers_exit_when_tpulint_is_killed(tmp_path: Path, how: signal.Signals) -> None:
    _busy_project(tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpulint", "check", "--no-cache", "-j", "2", "."],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        workers: dict[int, str] = {}
        while time.monotonic() < deadline and len(workers) < 2:
            workers = _children(proc.pid)
            time.sleep(0.05)
        assert len(workers) == 2, "tpulint did not start its two workers"
        time.sleep(0.5)  # both are busy with a file now
        assert proc.poll() is None
        proc.send_signal(how)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p, s) for p, s in workers.items()):
            time.sleep(0.05)
        assert not [p for p, s in workers.items() if _alive(p, s)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_workers_exit_after_a_normal_run(tmp_path: Path) -> None:
    for index in range(6):
        (tmp_path / f"m{index}.py").write_text(LEGACY)
    (tmp_path / "pyproject.toml").write_text("")
    code = (
        "import os, sys\n"
        "from tpulint.cli import main\n"
        "sys.argv = ['tpulint', 'check', '--no-cache', '-j', '2', '.']\n"
        "try:\n    main()\n"
        "except SystemExit:\n    pass\n"
        "def parent(pid):\n"
        "    try:\n"  # a process of another run may end while /proc is read
        "        with open(f'/proc/{pid}/stat', 'rb') as f:\n"
        "            return f.read().rsplit(b')', 1)[1].split()[1]\n"
        "    except OSError:\n"
        "        return None\n"
        "print(len([e for e in os.scandir('/proc') if e.name.isdigit() and "
        "parent(e.name) == str(os.getpid()).encode()]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip().splitlines()[-1] == "0", result.stderr
