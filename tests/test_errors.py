"""Usage, configuration and path errors: one `tpulint: error: ...` line and exit status 2,
through the real CLI. Non-regular files and files over `max-file-size` are skipped, each
with its own notice."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.helpers import LEGACY_TRAINER, make_project, run_subprocess


def _one_error_line(result, message: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == f"tpulint: error: {message}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["check", "--bogus"],
            "no such option '--bogus'. (Did you mean one of: '--jobs', '--verbose'?) "
            "(see `tpulint check --help`)",
        ),
        (["chek"], "no such command 'chek'. Did you mean 'check'? (see `tpulint --help`)"),
        (
            ["check", "-j", "0"],
            "invalid value for '--jobs' / '-j': 0 is not in the range x>=1 "
            "(see `tpulint check --help`)",
        ),
        (["explain"], "missing argument 'CODE' (see `tpulint explain --help`)"),
        (
            ["check", "--select", ""],
            "--select was given an empty value: name the rules to run (codes like TPU101, "
            "prefixes like TPU1, names, or ALL)",
        ),
        (
            ["check", "--max-file-size", "lots"],
            '--max-file-size must be a size like "2MB", "512KB" or 0 (no limit), got \'lots\'',
        ),
        (["check", "missing.py"], "path not found: missing.py"),
    ],
)
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    make_project(tmp_path, {"train.py": LEGACY_TRAINER})
    _one_error_line(run_subprocess(args, tmp_path), message)


@pytest.mark.parametrize(
    ("pyproject", "message"),
    [
        ('tool = "x"\n', "{root}/pyproject.toml: `tool` must be a table ([tool.tpulint]), got 'x'"),
        (
            '[tool.tpulint.per-file-ignores]\n"tests/[a-" = ["TPU1"]\n',
            "pyproject.toml: [tool.tpulint] `per-file-ignores`: invalid pattern 'tests/[a-': "
            "unclosed `[` character class",
        ),
        (
            '[tool.tpulint.per-file-ignores]\n"[z-a].py" = ["TPU1"]\n',
            "pyproject.toml: [tool.tpulint] `per-file-ignores`: invalid pattern '[z-a].py': "
            "invalid range `z-a` in a character class",
        ),
        (
            '[tool.tpulint]\nextend-exclude = ["legacy**"]\n',
            "pyproject.toml: [tool.tpulint] `extend-exclude`: invalid pattern 'legacy**': "
            "`**` must be a whole path component (`tests/**/*.py`)",
        ),
        (
            "[tool.tpulint]\nselect = []\n",
            "pyproject.toml: [tool.tpulint] `select` is empty, so no rule would run: name the "
            "rules to run, or remove `select` for the default set",
        ),
        (
            '[tool.tpulint]\nmax-file-size = "-1MB"\n',
            'pyproject.toml: [tool.tpulint] `max-file-size` must be a size like "2MB", '
            "\"512KB\" or 0 (no limit), got '-1MB'",
        ),
    ],
)
def test_configuration_errors_are_one_line(tmp_path: Path, pyproject: str, message: str) -> None:
    make_project(tmp_path, {"train.py": LEGACY_TRAINER}, pyproject=None)
    (tmp_path / "pyproject.toml").write_text(pyproject)
    _one_error_line(run_subprocess(["check", "."], tmp_path), message.format(root=tmp_path))


def test_valid_globs_are_accepted(tmp_path: Path) -> None:
    make_project(
        tmp_path,
        {"tests/test_x.py": LEGACY_TRAINER, "src/m.py": LEGACY_TRAINER},
        pyproject='[tool.tpulint.per-file-ignores]\n"tests/**/[!_]*.py" = ["TPU001"]\n'
        '"[]a].py" = ["TPU001"]\n',
    )
    result = run_subprocess(["check", "--no-cache", "."], tmp_path)
    assert result.exit_code == 1, result.stderr
    assert "src/m.py" in result.stdout and "tests/test_x.py" not in result.stdout


def test_symlinks_named_on_the_command_line(tmp_path: Path) -> None:
    make_project(tmp_path, {"train.py": LEGACY_TRAINER})
    (tmp_path / "self").symlink_to("self")
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    (tmp_path / "dangling.py").symlink_to("nowhere.py")
    _one_error_line(run_subprocess(["check", "self"], tmp_path), "symlink loop: self")
    _one_error_line(run_subprocess(["fix", "a.py"], tmp_path), "symlink loop: a.py")
    _one_error_line(
        run_subprocess(["check", "dangling.py"], tmp_path),
        "broken symlink: dangling.py -> nowhere.py",
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_non_regular_files_are_skipped_unopened(tmp_path: Path) -> None:
    make_project(tmp_path, {"pkg/train.py": LEGACY_TRAINER})
    os.mkfifo(tmp_path / "pkg" / "pipe.py")
    os.mkfifo(tmp_path / "named.py")
    server = socket.socket(socket.AF_UNIX)
    try:
        # AF_UNIX paths are limited to about 100 bytes: a short relative one.
        cwd = os.getcwd()
        os.chdir(tmp_path / "pkg")
        try:
            server.bind("sock.py")
        finally:
            os.chdir(cwd)
        # A FIFO nobody writes to would block an open() forever: the run must end anyway.
        result = run_subprocess(["check", "--no-cache", "pkg", "named.py"], tmp_path)
        assert result.exit_code == 1, result.stderr
        assert ("pkg/train.py:3:21: TPU001") in result.stdout
        assert sorted(result.stderr.splitlines()) == [
            "tpulint: warning: named.py: skipped: a FIFO, not a regular file",
            "tpulint: warning: pkg/pipe.py: skipped: a FIFO, not a regular file",
            "tpulint: warning: pkg/sock.py: skipped: a socket, not a regular file",
        ]
        fixed = run_subprocess(["fix", "--apply", "--no-cache", "pkg", "named.py"], tmp_path)
        assert fixed.exit_code == 0, fixed.stderr
        assert "pkg/pipe.py: skipped: a FIFO" in fixed.stderr
    finally:
        server.close()
    device = run_subprocess(["check", "/dev/null"], tmp_path)
    assert device.exit_code == 0
    assert (
        device.stderr == "tpulint: warning: /dev/null: skipped: a character device, "
        "not a regular file\n"
    )


def test_files_over_max_file_size_are_skipped(tmp_path: Path) -> None:
    big = LEGACY_TRAINER + "# padding\n" * 30_000  # about 300 KB
    make_project(tmp_path, {"big.py": big, "small.py": LEGACY_TRAINER})
    result = run_subprocess(["check", "--no-cache", "--max-file-size", "100KB", "."], tmp_path)
    assert result.exit_code == 1
    assert (
        "big.py:1:1: TPL005 Not checked: 300.1 KB is over `max-file-size` (100 KB); exclude "
        "the file or raise the limit"
    ) in result.stdout
    assert "small.py:3:21: TPU001" in result.stdout
    # The default (2 MB) checks it; so does a limit from the configuration, or 0 (none).
    assert "big.py:3:21: TPU001" in run_subprocess(["check", "--no-cache", "."], tmp_path).stdout
    with (tmp_path / "pyproject.toml").open("a") as handle:
        handle.write('max-file-size = "1KB"\n')
    configured = run_subprocess(["check", "--no-cache", "."], tmp_path)
    assert "big.py:1:1: TPL005" in configured.stdout and "small.py:3:21" in configured.stdout
    unlimited = run_subprocess(["check", "--no-cache", "--max-file-size", "0", "."], tmp_path)
    assert "big.py:3:21: TPU001" in unlimited.stdout
    fixed = run_subprocess(["fix", "--apply", "--no-cache", "."], tmp_path)
    assert (tmp_path / "big.py").read_text() == big  # skipped: never written
    assert "big.py:1:1: TPL005" in fixed.stdout
