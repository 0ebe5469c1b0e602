"""A hand-built DistributedSampler(num_replicas=1, rank=0) fails sharding (click runner)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from click.testing import CliRunner, Result
from tpulint.runtime.command import verify_command
from verify_helpers import CORES, ROOT, target

from tpulint.config.settings import Config
from tpulint.engine.source import check_source

pytestmark = pytest.mark.runtime

SAMPLER_LINE = 27
SOURCE = ROOT / "tests/runtime/targets/user_sampler.py"


@pytest.fixture(scope="module")
def result(xla: None, timed) -> Result:
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return timed(
            "user-built sampler (click runner, --json)",
            runner.invoke,
            verify_command,
            [target("user_sampler.py:UserSamplerModel"), "--json"],
        )
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def report(result: Result) -> dict[str, Any]:
    return json.loads(result.stdout)


def test_fails_sharding(result: Result, report: dict[str, Any]) -> None:
    assert result.exit_code == 1, result.output
    assert report["verdict"] == "fail"
    assert report["checks"]["sharding"]["status"] == "fail"
    assert "wrong num_replicas" in report["checks"]["sharding"]["summary"]


def test_names_the_sampler_and_where_it_was_built(report: dict[str, Any]) -> None:
    (cause,) = [c for c in report["causes"] if c["check"] == "sharding"]
    assert cause["kind"] == "user_sampler"
    assert cause["location"]["path"] == "tests/runtime/targets/user_sampler.py"
    assert cause["location"]["line"] == SAMPLER_LINE
    assert "num_replicas=1, rank=0" in cause["message"]
    assert "Lightning keeps" in cause["message"]
    assert cause["cores"] == list(range(CORES))
    # Whatever rule explains that line explains this (TPU301 is silent under tests/ today).
    static = {
        d.code
        for d in check_source(SOURCE.read_text(), str(SOURCE), Config())
        if d.start.line <= SAMPLER_LINE <= d.end.line
    }
    assert {rule["code"] for rule in cause["rules"]} == static


def test_every_core_draws_the_same_indices(report: dict[str, Any]) -> None:
    for epoch in report["shards"]:
        cores = epoch["cores"]
        assert len(cores) == CORES
        assert {(c["num_replicas"], c["rank"]) for c in cores} == {(1, 0)}
        assert {tuple(c["first"]) for c in cores} == {tuple(cores[0]["first"])}
        assert {c["indices"] for c in cores} == {128}  # the whole dataset on every core
        assert epoch["covered"] == 128
        assert epoch["shared"] == 128 * (CORES - 1)
        assert epoch["status"] == "fail"
        # and each epoch takes 8 steps instead of the 1 it should
        assert {c["steps"] for c in cores} == {8}
    assert report["checks"]["compile_stability"]["status"] == "pass"
