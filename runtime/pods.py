"""Multi-host slices (pods): verify refuses them, in one line that says what to run instead.

Why, from the libraries (torch_xla 2.9, Lightning 2.6):

* On every worker of a slice, `xmp.spawn` configures the whole slice, not the host:
  `_internal/tpu.py` `configure_topology` sets TPU_PROCESS_BOUNDS to the slice's process
  bounds and TPU_PROCESS_ADDRESSES to every worker's processes
  (`worker_ips = get_worker_ips()`, one `ip:port` per process of each worker). libtpu then
  waits for all of them: run on one worker, the training never starts (pytorch/xla#7714);
  verify would only see its own watchdog fire.
* Run on every worker at once, each worker's verify would see only its own host's cores, while
  Lightning's sampler is built with the global replica count (`XLAStrategy
  .distributed_sampler_kwargs`: `num_replicas=self.world_size`, `xr.world_size()` counts
  every host's devices): one host's shards are a fraction of the dataset by design, and a
  per-host judge would call Lightning's own sampler wrong. Judging a pod needs every host's
  record in one place.

That is what `tpulint.lightning.TPUReadiness` is for: it records the same evidence in the
user's own run, every rank its own files, nothing waiting on another host; gathered into one
directory, `tpulint report DIR` judges them with verify's judge against the global world
size. Standard library only.
"""

from __future__ import annotations

from tpulint.runtime.errors import VerifyError
from tpulint.runtime.topology import Topology

POD_COMMAND = (
    "gcloud compute tpus tpu-vm ssh NAME --zone ZONE --worker=all --command 'python train.py'"
)


def pod_message(topology: Topology) -> str:
    worker = f"worker {topology.worker} of " if topology.worker is not None else ""
    slice_name = topology.tpu_type or "a multi-host TPU slice"
    return (
        f"this TPU VM is {worker}{slice_name}, {topology.hosts} hosts: verify trains on one"
        " host and cannot judge a pod slice; record your real run on every worker with the"
        " Callback tpulint.lightning.TPUReadiness(dirpath) (`" + POD_COMMAND + "`), gather"
        " the directories into one and run `tpulint report DIR`"
    )


def refuse_pod(topology: Topology) -> None:
    if topology.device == "TPU" and topology.hosts > 1:
        raise VerifyError(pod_message(topology))
