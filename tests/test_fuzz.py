"""Fuzzing `check` and `fix` with generated and mutated programs (see tests/fuzzing.py).

A short, deterministic run is part of the default tests (a few seconds). The long run is
opt-in: `pytest tests/test_fuzz.py --fuzz N` draws N programs from each strategy, counts
every failure instead of stopping at the first, prints the tally, and fails if anything
failed. With `--corpus PATH`, corpus files are mutated too.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzzing import (
    Tally,
    combined,
    corpus_sources,
    examine,
    generated,
    mutated,
    rule_examples,
)

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

SHORT = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _pool(pytestconfig: pytest.Config, corpus_limit: int) -> tuple[str, ...]:
    corpus = pytestconfig.getoption("--corpus")
    return rule_examples() + corpus_sources(corpus, corpus_limit)


def _assert_clean(tally: Tally) -> None:
    assert not tally.problems, "\n\n".join(tally.problems[:3])


def test_generated_programs() -> None:
    tally = Tally()

    @SHORT
    @given(generated(), st.booleans())
    def run(source: str, unsafe: bool) -> None:
        examine(source, unsafe, tally)

    run()
    _assert_clean(tally)
    assert tally.programs >= 10


def test_mutated_real_code(pytestconfig: pytest.Config) -> None:
    tally = Tally()
    pool = _pool(pytestconfig, corpus_limit=50)

    @settings(SHORT, max_examples=40)
    @given(mutated(pool), st.booleans())
    def run(source: str, unsafe: bool) -> None:
        examine(source, unsafe, tally)

    run()
    _assert_clean(tally)
    # Mutating rule examples and real code makes rules fire and fixes apply.
    assert tally.findings > 0 and tally.fixed > 0, tally.summary()


@pytest.mark.fuzz
@pytest.mark.parametrize("strategy", ["generated", "mutated", "combined"])
def test_long_fuzz_run(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory, strategy: str
) -> None:
    examples = pytestconfig.getoption("--fuzz")
    pool = _pool(pytestconfig, corpus_limit=400)
    source_strategy = {
        "generated": generated(),
        "mutated": mutated(pool),
        "combined": combined(pool),
    }[strategy]
    tally = Tally()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(source_strategy, st.booleans())
    def run(source: str, unsafe: bool) -> None:
        examine(source, unsafe, tally)

    run()
    report = f"fuzz {strategy}: {tally.summary()}"
    if tally.failing_sources:
        folder = tmp_path_factory.mktemp(f"fuzz-{strategy}")
        for index, source in enumerate(tally.failing_sources):
            (folder / f"failure{index}.py").write_bytes(source.encode("utf-8", "surrogatepass"))
        report += f"; failing sources in {folder}"
    print(report)
    _assert_clean(tally)
