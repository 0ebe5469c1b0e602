"""The project model's memoised name and call resolution answer as if nothing had been asked
before: the same answers in any order of questions, also along re-export chains that meet the
lookup's depth limit."""

from __future__ import annotations

from pathlib import Path

from tpulint.analysis.project import ProjectModel, build_model

CHAIN = 16  # longer than the depth a lookup follows re-exports to


def _chain(tmp_path: Path) -> list[tuple[str, str]]:
    """`pkg/m0.py` re-exports `X` from `pkg/m1.py`, ... down to `pkg/m15.py`, which defines it;
    `pkg/use.py` calls through the chain at several depths."""
    root = tmp_path / "pkg"
    root.mkdir()
    files = {"__init__.py": ""}
    for i in range(CHAIN - 1):
        files[f"m{i}.py"] = f"from pkg.m{i + 1} import X\n"
    files[f"m{CHAIN - 1}.py"] = "class X:\n    def run(self):\n        return helper()\n\n\n"
    files[f"m{CHAIN - 1}.py"] += "def helper():\n    return 1\n"
    calls = "".join(f"    pkg.m{i}.X().run()\n" for i in range(CHAIN))
    files["use.py"] = "import pkg\nfrom pkg.m0 import X\n\n\ndef main():\n    X()\n" + calls
    out = []
    for name, text in files.items():
        path = root / name
        path.write_text(text)
        out.append((str(path), text))
    return out


def _answers(model: ProjectModel, order: list[int]) -> dict[int, str | None]:
    use = next(m for m in model.modules.values() if m.path.endswith("use.py"))
    out = {}
    for i in order:
        found = model.lookup(f"pkg.m{i}.X", use)
        out[i] = getattr(found, "gkey", None)
    return out


def test_lookups_along_a_long_chain_do_not_depend_on_the_order_asked(tmp_path: Path) -> None:
    files = _chain(tmp_path)
    alone = {}
    for i in range(CHAIN):
        alone.update(_answers(build_model(files), [i]))
    # The chain is followed to its end from near it, not from its far start.
    assert alone[CHAIN - 1] is not None and alone[0] is None
    forward = list(range(CHAIN))
    assert _answers(build_model(files), forward) == alone
    assert _answers(build_model(files), forward[::-1]) == alone
    assert _answers(build_model(files), forward[::2] + forward[1::2]) == alone


def test_call_resolution_and_hot_code_do_not_depend_on_what_was_asked_first(
    tmp_path: Path,
) -> None:
    files = _chain(tmp_path)
    fresh = build_model(files)
    hot_first = sorted(fresh.hot)
    callers_first = sorted(fresh._callers())
    asked = build_model(files)
    _answers(asked, list(range(CHAIN))[::-1])
    asked._callers()
    assert sorted(asked._callers()) == callers_first
    assert sorted(asked.hot) == hot_first
    use = next(m for m in asked.modules.values() if m.path.endswith("use.py"))
    again = asked.resolve_call(use, None, "name", "pkg.m3.X")
    assert again is asked.resolve_call(use, None, "name", "pkg.m3.X")  # kept
    other = build_model(files)
    use = next(m for m in other.modules.values() if m.path.endswith("use.py"))
    assert [t.gkey for t in again] == [
        t.gkey for t in other.resolve_call(use, None, "name", "pkg.m3.X")
    ]
