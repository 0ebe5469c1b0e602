"""Running tpulint as an unprivileged user, for tests where root would bypass permissions.

As root, the CLI is run as `nobody` (subprocess's `user=`/`group=`): with this test run's
Python when `nobody` may execute it, else with a system interpreter of the same version,
importing tpulint and its dependencies from this environment's site-packages. Tests skip, with
the reason, only when there is no such user or no interpreter it can run. Files the test
gives that user live in a folder it can reach (pytest's own temporary folders are private to
root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from tests.helpers import Result

_SITE = sysconfig.get_paths()["purelib"]
_BOOT = (
    "import site, sys\n"
    "sys.path.insert(0, {site!r})\n"
    "site.addsitedir({site!r})\n"
    "from tpulint.cli import main\n"
    "sys.argv = ['tpulint', *sys.argv[1:]]\n"
    "main()\n"
)


@cache
def unprivileged() -> tuple[int, int, str] | str:
    """(uid, gid, interpreter) to run the CLI unprivileged, or why it cannot be done."""
    if os.geteuid() != 0:
        return os.geteuid(), os.getegid(), sys.executable
    try:
        import pwd

        entry = pwd.getpwnam("nobody")
    except (ImportError, KeyError):
        return "no unprivileged user (`nobody`) on this machine"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, os.path.realpath(sys.executable)]
    candidates += [f"{d}/python{version}" for d in ("/usr/bin", "/usr/local/bin", "/bin")]
    check = _BOOT.format(site=_SITE).replace("main()\n", "import libcst\n")
    for interpreter in dict.fromkeys(candidates):
        try:
            done = subprocess.run(
                [interpreter, "-I", "-S", "-c", check],
                user=entry.pw_uid,
                group=entry.pw_gid,
                extra_groups=[],
                capture_output=True,
                cwd="/",
                timeout=60,
            )
        except OSError:
            continue
        if done.returncode == 0:
            return entry.pw_uid, entry.pw_gid, interpreter
    return f"`nobody` cannot run a Python {version} that imports tpulint"


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A temporary folder the unprivileged user can enter (not write: files inside decide)."""
    folder = Path(tempfile.mkdtemp(prefix="tpulint-unprivileged-"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_unprivileged(args: list[str], cwd: Path) -> Result:
    how = unprivileged()
    assert not isinstance(how, str), how
    uid, gid, interpreter = how
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", "HOME": str(cwd)}
    done = subprocess.run(
        [interpreter, "-I", "-S", "-c", _BOOT.format(site=_SITE), *args],
        cwd=cwd,
        user=uid if os.geteuid() == 0 else None,
        group=gid if os.geteuid() == 0 else None,
        extra_groups=[] if os.geteuid() == 0 else None,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Result(done.returncode, done.stdout, done.stderr)
