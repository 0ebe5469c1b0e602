"""The verify report: what `verify()` returns and what `--json` prints.

The JSON form is a stable schema (documented in docs/verify.md): fields are only added, and
`schema_version` changes when a field changes meaning or goes away. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.judge.attribution import RuleHit

SCHEMA_VERSION = 1

PASS, FAIL, ERROR = "pass", "fail", "error"
EXIT_CODES = {PASS: 0, FAIL: 1, ERROR: 2}


@dataclass(frozen=True)
class Location:
    path: str  # relative to the working directory when inside it
    line: int
    function: str | None = None
    user: bool = True  # False: a library frame (Lightning, torch_xla), no user frame on the stack

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "function": self.function, "user": self.user}


@dataclass
class Cause:
    """One reason behind a check's status, placed at a source line where one is known."""

    check: (
        str  # sharding | compile_stability | transfers | batch_geometry | validation | test | run
    )
    kind: str  # e.g. data_dependent_shape, host_read, ragged_last_batch, user_sampler
    severity: str  # fail | warn | info
    message: str
    location: Location | None = None
    rules: list[RuleHit] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    cores: list[int] = field(default_factory=list)
    count: int | None = None

    @property
    def codes(self) -> list[str]:
        return [hit.code for hit in self.rules]

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "location": self.location.to_json() if self.location else None,
            "rules": [hit.to_json() for hit in self.rules],
            "steps": self.steps,
            "cores": self.cores,
            "count": self.count,
        }


@dataclass
class Check:
    name: str
    status: str  # pass | warn | fail | skipped
    summary: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "summary": self.summary, **self.details}


@dataclass
class CoreStep:
    batch: list[list[int]] | None
    transfers: int  # host reads seen in this core's thread (the tracer)
    compiles: int  # graphs this core compiled in its step marker

    def to_json(self) -> dict[str, Any]:
        return {"batch": self.batch, "transfers": self.transfers, "compiles": self.compiles}


@dataclass
class StepRow:
    step: int  # training: the step's index in the run; validation/test: the batch's in its run
    epoch: int
    batch_idx: int
    # warmup | steady | epoch_start | ragged; validation and test: first_run | steady | ragged
    phase: str
    uncached_compiles: int  # summed over the cores (torch_xla's counters are per process)
    cached_executions: int
    transfers: int  # device-to-host transfers, all cores
    host_ops: int  # ops torch_xla ran on the host (aten::* counters, .item() included)
    seconds: float
    batch_size: int | None  # the per-core batch size when every core had the same
    cores: dict[int, CoreStep] = field(default_factory=dict)
    stage: str = "train"  # train | validate | test
    run: int | None = None  # validation/test: which run of that loop (0: the first)
    new_graphs: int = 0  # XLA graphs compiled here for the first time in the run
    graphs: list[str] = field(default_factory=list)  # their hashes
    optimizer_steps: int = 0  # optimizer steps taken, summed over the cores
    fallbacks: dict[str, int] = field(default_factory=dict)  # CPU-fallback op -> count

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "epoch": self.epoch,
            "batch_idx": self.batch_idx,
            "stage": self.stage,
            "run": self.run,
            "phase": self.phase,
            "uncached_compiles": self.uncached_compiles,
            "new_graphs": self.new_graphs,
            "graphs": self.graphs,
            "cached_executions": self.cached_executions,
            "transfers": self.transfers,
            "host_ops": self.host_ops,
            "fallbacks": self.fallbacks,
            "optimizer_steps": self.optimizer_steps,
            "seconds": self.seconds,
            "batch_size": self.batch_size,
            "cores": {str(core): data.to_json() for core, data in sorted(self.cores.items())},
        }


@dataclass
class CoreShard:
    core: int
    sampler: str | None
    built_at: Location | None  # the user's line for a sampler the user built; None: Lightning's
    num_replicas: int | None
    rank: int | None
    indices: int  # indices the sampler yields this epoch
    unique: int
    batches: int | None  # len(loader) on this core
    steps: int  # steps this core ran this epoch
    first: list[int]  # the first few indices, to eyeball

    def to_json(self) -> dict[str, Any]:
        return {
            "core": self.core,
            "sampler": self.sampler,
            "built_at": self.built_at.to_json() if self.built_at else None,
            "num_replicas": self.num_replicas,
            "rank": self.rank,
            "indices": self.indices,
            "unique": self.unique,
            "batches": self.batches,
            "steps": self.steps,
            "first": self.first,
        }


@dataclass
class ShardEpoch:
    epoch: int
    dataset_size: int | None
    cores: list[CoreShard]
    shared: int  # index occurrences beyond the first, across cores (overlap)
    allowed_padding: int  # repeats DistributedSampler adds to even out the shards
    covered: int
    missing: int
    allowed_missing: int  # dropped by DistributedSampler(drop_last=True)
    equal_batches: bool
    status: str

    def to_json(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "dataset_size": self.dataset_size,
            "shared": self.shared,
            "allowed_padding": self.allowed_padding,
            "covered": self.covered,
            "missing": self.missing,
            "allowed_missing": self.allowed_missing,
            "equal_batches": self.equal_batches,
            "status": self.status,
            "cores": [core.to_json() for core in self.cores],
        }


@dataclass
class VerifyReport:
    target: str | None  # as given; None: the model class came from --config
    verdict: str  # pass | fail | error
    summary: str  # one line: the verdict and its main reason
    datamodule: str | None = None
    init_args: dict[str, Any] = field(default_factory=dict)
    # The user's real run (runtime/judge/run_inputs.py): LightningCLI files as given, what was
    # built from them, and the Trainer's arguments (requested, used, overridden and why).
    datamodule_args: dict[str, Any] = field(default_factory=dict)
    config: list[str] = field(default_factory=list)
    model_class: str | None = None
    datamodule_class: str | None = None
    trainer: dict[str, Any] = field(default_factory=dict)
    backend: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Check] = field(default_factory=dict)
    steps: list[StepRow] = field(default_factory=list)
    validation: list[StepRow] = field(default_factory=list)  # every validation batch
    test: list[StepRow] = field(default_factory=list)  # every test batch (--test)
    graphs: list[dict[str, Any]] = field(default_factory=list)  # every XLA graph compiled
    shards: list[ShardEpoch] = field(default_factory=list)
    eval_shards: dict[str, list[ShardEpoch]] = field(default_factory=dict)  # per loop, per run
    causes: list[Cause] = field(default_factory=list)
    # The step's memory per core: estimate, parts, XLA's sizes, verdict (judge/check_memory.py).
    memory: dict[str, Any] = field(default_factory=dict)
    setup: dict[str, int] = field(default_factory=dict)
    wall_seconds: float = 0.0
    error: str | None = None  # the one-line reason when verify could not run
    error_detail: str | None = None  # its traceback or log tail (shown with -v, not in JSON)
    log: str = ""  # the child's output (shown with -v, not in JSON)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def causes_for(self, check: str) -> list[Cause]:
        return [c for c in self.causes if c.check == check]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "verify",
            "target": self.target,
            "datamodule": self.datamodule,
            "init_args": self.init_args,
            "datamodule_args": self.datamodule_args,
            "config": self.config,
            "model_class": self.model_class,
            "datamodule_class": self.datamodule_class,
            "trainer": self.trainer,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "summary": self.summary,
            "error": self.error,
            "backend": self.backend,
            "settings": self.settings,
            "run": self.run,
            "checks": {name: check.to_json() for name, check in self.checks.items()},
            "causes": [cause.to_json() for cause in self.causes],
            "steps": [row.to_json() for row in self.steps],
            "validation": [row.to_json() for row in self.validation],
            "test": [row.to_json() for row in self.test],
            "graphs": self.graphs,
            "shards": [epoch.to_json() for epoch in self.shards],
            "eval_shards": {
                name: [run.to_json() for run in runs] for name, runs in self.eval_shards.items()
            },
            "memory": self.memory or None,
            "setup": self.setup,
            "wall_seconds": round(self.wall_seconds, 2),
        }

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), indent=2)


@dataclass
class CompareReport:
    """The module as written next to the output of `tpulint fix` on its file(s)."""

    original: VerifyReport
    fixed: VerifyReport
    changed: bool  # False: tpulint fix changed nothing, one run stands for both
    fixes: list[dict[str, Any]] = field(default_factory=list)  # {path, code, line, message}
    remaining: list[dict[str, Any]] = field(default_factory=list)
    diffs: dict[str, str] = field(default_factory=dict)  # file -> unified diff of the fix
    # Whether the fixed module trains the same (judge/equivalence.py); None: not checked.
    equivalence: Any = None

    @property
    def verdict(self) -> str:
        if ERROR in (self.original.verdict, self.fixed.verdict):
            return ERROR
        if self.equivalence is not None and not self.equivalence.equivalent:
            return FAIL
        return self.fixed.verdict

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "compare",
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "changed": self.changed,
            "fixes": self.fixes,
            "remaining": self.remaining,
            "diffs": self.diffs,
            "equivalence": self.equivalence.to_json() if self.equivalence is not None else None,
            "original": self.original.to_json(),
            "fixed": self.fixed.to_json(),
        }

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), indent=2)
