"""Where verify's cores are, found without torch: TPU VM types and their process layouts, the
`--cores` values Lightning accepts there, multi-host slices refused in one line, and what
`tpulint doctor` prints. Milliseconds each; no TPU needed (the PCI bus and the metadata are
given as torch_xla would read them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.pods import refuse_pod
from tpulint.runtime.topology import TpuType, emulated_topology, tpu_topology

V4_CHIP, V3_CHIP, V5E_CHIP = "0x005e", "0x0027", "0x0063"


def _on(accelerator: str, chips: list[str], hosts: str = "", worker: str = "0"):
    environ = {
        "TPU_SKIP_MDS_QUERY": "1",
        "TPU_ACCELERATOR_TYPE": accelerator,
        "TPU_WORKER_HOSTNAMES": hosts,
        "TPU_WORKER_ID": worker,
    }
    return tpu_topology(environ, chips=chips)


@pytest.mark.parametrize(
    ("name", "chips", "devices", "processes", "per_process"),
    [
        ("v2-8", [V3_CHIP] * 4, 8, 4, 2),
        ("v3-8", [V3_CHIP] * 4, 8, 4, 2),
        ("v4-8", [V4_CHIP] * 4, 4, 4, 1),
        ("v5p-8", ["0x0062"] * 4, 4, 4, 1),
        ("v5litepod-8", [V5E_CHIP] * 8, 8, 8, 1),
        ("v6e-8", ["0x006f"] * 8, 8, 8, 1),
        ("v5litepod-4", [V5E_CHIP] * 4, 4, 4, 1),
    ],
)
def test_tpu_vm_layouts(name: str, chips, devices: int, processes: int, per_process: int) -> None:
    topology = _on(name, chips)
    assert (topology.local_devices, topology.processes, topology.devices_per_process) == (
        devices,
        processes,
        per_process,
    )
    assert topology.hosts == 1
    assert topology.allowed_cores == [1, devices]


def test_cores_checked_against_the_tpu_type() -> None:
    v4 = _on("v4-8", [V4_CHIP] * 4)
    assert v4.check_cores(None) == 4  # every local device by default
    assert v4.check_cores(1) == 1
    with pytest.raises(VerifyError) as refused:
        v4.check_cores(8)
    assert refused.value.message == (
        "--cores 8: this v4-8 has 4 TPU cores (4 processes x 1 device); Lightning trains on 1"
        " core or on all of them, so --cores accepts 1 or 4"
    )
    with pytest.raises(VerifyError, match="--cores accepts 1 or 8"):
        _on("v3-8", [V3_CHIP] * 4).check_cores(4)


def test_a_pod_is_refused_with_what_to_run_instead() -> None:
    pod = _on("v4-32", [V4_CHIP] * 4, hosts="h0,h1,h2,h3", worker="2")
    assert pod.hosts == 4 and pod.worker == 2
    with pytest.raises(VerifyError) as refused:
        refuse_pod(pod)
    message = refused.value.message
    assert message.startswith("this TPU VM is worker 2 of v4-32, 4 hosts:")
    assert "TPUReadiness(dirpath)" in message and "--worker=all" in message
    assert "tpulint report DIR" in message
    # the slice's size alone says so when the worker list is unknown
    assert _on("v5litepod-16", [V5E_CHIP] * 4).hosts == 4


def test_type_names() -> None:
    assert TpuType.parse("v5litepod-8") == TpuType("v5e-8", "v5e", 8)
    assert TpuType.parse("v4-16") == TpuType("v4-16", "v4", 8)
    assert TpuType.parse("v3-8").devices_per_chip == 2
    assert TpuType.parse("not a type") is None


def test_emulated_layouts() -> None:
    assert emulated_topology(None, None, 8).layout == "1 process x 8 devices"
    assert emulated_topology(None, 4, 8).local_devices == 4
    v3 = emulated_topology("v3-8", None, 8)
    assert (v3.processes, v3.devices_per_process, v3.tpu_type) == (4, 2, "v3-8")
    with pytest.raises(VerifyError, match="not a TPU VM type verify emulates"):
        emulated_topology("v4-32", None, 8)


def test_doctor_prints_the_emulated_topology() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tpulint", "doctor", "--emulate", "v4-8"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PJRT_DEVICE": "CPU"},
        timeout=60,
    )
    assert run.returncode in (0, 1), run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "tpulint doctor"
    assert "  backend      emulated: PJRT CPU (PJRT_DEVICE=CPU)" in lines
    assert "  cores        4 emulated, as on a v4-8: 4 processes x 1 device" in lines
    assert "  --cores      1 or 4 (default 4)" in lines
    assert any(line.startswith("  versions     python ") for line in lines)
    assert "  environment  PJRT_DEVICE=CPU: the XLA backend" in run.stdout
    assert "libtpu lock" in run.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "tpulint", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    data = json.loads(as_json.stdout)
    assert data["topology"]["processes"] == 1 and data["backend"]["emulated"] is True
