"""libtpu's lock file. A process that opens the TPU creates /tmp/libtpu_lockfile and removes it
when it exits normally; a process killed by a signal (verify's own end of a run, a SIGKILL,
an `os._exit`) leaves it behind, and the next start on the VM fails with "The TPU is already
in use by process with pid ..." although no process uses the TPU (jax-ml/jax#10192: the
message is triggered by the file's presence alone). Standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

LOCK_FILE = Path("/tmp/libtpu_lockfile")
_TPU_DEVICES = ("/dev/accel", "/dev/vfio/")


@dataclass
class LockStatus:
    path: Path
    exists: bool
    users: list[int] = field(default_factory=list)  # pids that have a TPU device open

    @property
    def stale(self) -> bool:
        return self.exists and not self.users

    def line(self) -> str:
        if not self.exists:
            return f"{self.path}: none"
        if self.users:
            pids = ", ".join(map(str, self.users))
            return f"{self.path}: held; the TPU is in use by process {pids}"
        return (
            f"{self.path}: left behind (no process uses the TPU); it blocks the next start on"
            f" this VM: rm {self.path}"
        )


def tpu_users(proc: str = "/proc") -> list[int]:
    """Processes with a TPU device open (what libtpu itself looks for)."""
    users = []
    try:
        entries = os.listdir(proc)
    except OSError:
        return users
    for entry in entries:
        if not entry.isdigit():
            continue
        fd_dir = os.path.join(proc, entry, "fd")
        try:
            targets = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:
            continue
        if any(target.startswith(_TPU_DEVICES) for target in targets):
            users.append(int(entry))
    return sorted(users)


def lock_status(path: Path = LOCK_FILE) -> LockStatus:
    exists = path.exists()
    return LockStatus(path, exists, tpu_users() if exists else [])


def remove_if_left_by(existed_before: bool, path: Path = LOCK_FILE) -> bool:
    """After a run verify ended: remove the lock file if the run left it (it was not there
    before, and no process uses the TPU now). Returns whether it was removed."""
    if existed_before or not path.exists() or tpu_users():
        return False
    try:
        path.unlink()
    except OSError:
        return False
    return True
