"""Running one command and measuring it: wall time, CPU time and peak memory of its whole
process tree.

Peak memory is sampled from /proc: every `interval` seconds the RSS of the root process and
of every descendant is summed (peers and tpulint all use worker processes, so the RSS of the
root alone would miss most of it). The process tree is rediscovered every few samples by
scanning /proc/*/stat for parent ids (there is no /proc/PID/task/TID/children here). Summed
RSS counts pages shared by forked workers once per process, so it overstates what a forked
pool really uses; PSS (proportional set size, /proc/PID/smaps_rollup) splits shared pages
between the processes that share them and is sampled too, less often, as the fairer figure.

CPU time is the user+system time of the child and every descendant it waited for
(getrusage(RUSAGE_CHILDREN) before and after). On a shared machine it is much less sensitive
to other load than wall time.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_INTERVAL = 0.02  # seconds between RSS samples
DISCOVER_EVERY = 5  # rescan /proc for new descendants every N samples
PSS_EVERY = 10  # read PSS every N samples (smaps_rollup walks page tables: costlier)


@dataclass
class Measurement:
    """One run of one command."""

    wall: float  # seconds, from spawn to exit
    cpu: float  # user+system seconds of the process tree
    peak_rss_mib: float  # max over samples of the summed RSS of the tree
    peak_pss_mib: float  # max over samples of the summed PSS of the tree
    max_processes: int  # most processes seen in the tree at once
    returncode: int
    load_before: float  # 1-minute load average when the run started
    load_after: float
    stdout_tail: str = ""
    stderr_tail: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def load_average() -> float:
    return os.getloadavg()[0]


def _parent_ids() -> dict[int, int]:
    """pid -> parent pid for every process visible in /proc."""
    out: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: split after the last ')'.
        fields = data[data.rfind(b")") + 2 :].split()
        out[int(entry.name)] = int(fields[1])
    return out


def descendants(root: int) -> set[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parent_ids().items():
        children.setdefault(ppid, []).append(pid)
    found = {root}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class TreeSampler(threading.Thread):
    """Samples the summed RSS (and PSS) of a process tree until stopped."""

    def __init__(self, root: int, interval: float = SAMPLE_INTERVAL) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.interval = interval
        self.peak_rss = 0
        self.peak_pss = 0
        self.max_processes = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        pids = {self.root}
        tick = 0
        while not self._stop_event.is_set():
            if tick % DISCOVER_EVERY == 0:
                pids = descendants(self.root)
            self.max_processes = max(self.max_processes, len(pids))
            self.peak_rss = max(self.peak_rss, sum(_rss_bytes(p) for p in pids))
            if tick % PSS_EVERY == 0:
                self.peak_pss = max(self.peak_pss, sum(_pss_bytes(p) for p in pids))
            tick += 1
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


def prioritized(nice: int) -> Callable[[], None] | None:
    """A pre-exec hook that runs the command at niceness `nice`, in a session of its own.

    With autogroup scheduling (Linux, /proc/sys/kernel/sched_autogroup_enabled = 1), the CPU
    is first shared between sessions and nice only orders processes within one: so the command
    gets its own session (its own autogroup) and that autogroup gets the niceness too."""
    if not nice:
        return None

    def hook() -> None:  # runs in the child after setsid (start_new_session=True)
        with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as handle:
            handle.write(str(nice))
        with contextlib.suppress(OSError):
            os.nice(nice)

    return hook


def run_measured(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    log_dir: Path,
    name: str,
    timeout: float | None = None,
    nice: int = 0,
) -> Measurement:
    """Run `argv` to completion and measure it. Its output goes to files under `log_dir`
    (a linter's findings can be megabytes: never through a pipe we would have to drain)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / f"{name}.out", log_dir / f"{name}.err"
    load_before = load_average()
    cpu_before = _children_cpu()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=bool(nice),
            preexec_fn=prioritized(nice),
        )
        sampler = TreeSampler(proc.pid)
        sampler.start()
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            returncode = proc.wait()
        wall = time.perf_counter() - start
        sampler.stop()
    return Measurement(
        wall=wall,
        cpu=_children_cpu() - cpu_before,
        peak_rss_mib=sampler.peak_rss / 2**20,
        peak_pss_mib=sampler.peak_pss / 2**20,
        max_processes=sampler.max_processes,
        returncode=returncode,
        load_before=load_before,
        load_after=load_average(),
        stdout_tail=_tail(out_path),
        stderr_tail=_tail(err_path),
    )
