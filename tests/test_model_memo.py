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


def _shadowing_package(tmp_path: Path) -> list[tuple[str, str]]:
    """A project package named like a library it imports (`checks/torch/`, its parent no
    package, so the model names it `torch`): `import torch` in it, and `torch.nn` anywhere,
    goes round the package and back until the lookup's depth limit."""
    files = {
        "checks/torch/__init__.py": (
            "from torch.depth import DepthCheck\nfrom .cycle import *\nfrom .image import *\n"
        ),
        # Star imports round the package: a name `image` defines is found past them only
        # when the cycle met the limit with depth to spare (the answer depends on the depth).
        "checks/torch/cycle.py": "from torch import *\n",
        "checks/torch/image.py": (
            "import torch\nfrom torch import depth\n\n\nclass ImageCheck:\n"
            "    def run(self, x):\n        return torch.cat(x)\n"
        ),
        "checks/torch/depth.py": (
            "import torch\n\n\nclass DepthCheck:\n    def run(self, x):\n"
            "        return torch.stack(x)\n"
        ),
        "checks/use.py": (
            "import torch\nimport torch.nn as nn\nfrom torch import DepthCheck, ImageCheck\n\n\n"
            "def fit(loader):\n    DepthCheck().run([])\n    ImageCheck().run([])\n"
            "    return torch.cat([nn.Linear(2, 2)(x) for x in loader])\n"
        ),
    }
    out = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append((str(path), text))
    return out


NAMES = [
    "torch.nn",
    "torch.nn.Linear",
    "torch.cat",
    "torch.depth.DepthCheck",
    "torch.DepthCheck",
    "torch.ImageCheck",
    "torch.image.ImageCheck",
    ".DepthCheck",
]


def _deep_answers(
    model: ProjectModel, questions: list[tuple[str, int]]
) -> dict[tuple[str, int], tuple[str | None, bool]]:
    """Each name looked up from `use.py` at a depth, with whether it met the depth limit
    (what the lookup further up a chain reads; nothing reads it above a question from the
    top)."""
    use = next(m for m in model.modules.values() if m.path.endswith("use.py"))
    out = {}
    for name, depth in questions:
        model._lookup_cut = False
        found = model.lookup(name, use, depth)
        gkey = getattr(found, "gkey", getattr(found, "path", None))
        out[(name, depth)] = (gkey, model._lookup_cut and depth > 0)
    return out


def test_lookups_round_a_cycle_answer_as_a_fresh_model_at_every_depth(tmp_path: Path) -> None:
    """Answers that met the depth limit are kept by the depth they were asked at (and say
    again that they met it): asked in any order, deep or from the top, each is the answer of
    a model asked nothing before."""
    files = _shadowing_package(tmp_path)
    assert "torch" in build_model(files).by_name  # the shape: the package is named `torch`
    questions = [(name, depth) for name in NAMES for depth in (0, 1, 6, 11, 12, 13)]
    alone = {}
    for question in questions:
        alone.update(_deep_answers(build_model(files), [question]))
    assert any(cut for _, cut in alone.values())  # some went round the cycle to the limit
    assert alone[("torch.DepthCheck", 0)][0] is not None
    assert alone[("torch.DepthCheck", 12)] == (None, True)
    assert alone[("torch.ImageCheck", 6)][0] is not None and alone[("torch.ImageCheck", 6)][1]
    assert alone[("torch.ImageCheck", 12)] == (None, True)
    for order in (questions, questions[::-1], questions[::2] + questions[1::2]):
        assert _deep_answers(build_model(files), order) == alone
    model = build_model(files)
    _deep_answers(model, questions)
    assert model._cut_lookups  # kept
    assert _deep_answers(model, questions[::-1]) == alone  # and given again as computed


def _two_trains(tmp_path: Path) -> list[tuple[str, str]]:
    """`m.train(loader)` and `m.train()` on values of unknown class, and two classes with a
    `train` method: one needs an argument (a call passing none never runs it)."""
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": (
            "class Net:\n    def train(self, loader):\n        return loader\n\n\n"
            "class Head:\n    def train(self):\n        return 1\n"
        ),
        "pkg/use.py": (
            "def fit(m, loader):\n    m.train(loader)\n\n\n"
            "def evaluate(m):\n    m.train()\n    return helper()\n\n\n"
            "def helper():\n    return 2\n"
        ),
    }
    out = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append((str(path), text))
    return out


def test_callers_and_callees_by_method_name_do_not_depend_on_what_was_asked_first(
    tmp_path: Path,
) -> None:
    """`callers` and `_callees_of_use` are kept (a call by method name once per name and
    whether the call passes arguments): each answer is a fresh scope's."""
    files = _two_trains(tmp_path)
    model = build_model(files)
    use = next(m for m in model.modules.values() if m.path.endswith("use.py"))
    models = next(m for m in model.modules.values() if m.path.endswith("models.py"))
    fit, evaluate = f"{use.path}:fit#0", f"{use.path}:evaluate#0"
    net, head = f"{models.path}:Net.train#0", f"{models.path}:Head.train#0"
    helper = f"{use.path}:helper#0"
    meth = ["meth", "train"]

    def answers(order: list[str]) -> dict[str, list[str]]:
        scope = build_model(files).scope
        out = {}
        for question in order:
            if question.startswith("callers "):
                out[question] = sorted(scope.callers(question.split(" ", 1)[1]))
            else:
                out[question] = sorted(scope._callees_of_use(question, meth))
        return out

    questions = [fit, evaluate, f"callers {net}", f"callers {head}", f"callers {helper}"]
    alone = {}
    for question in questions:
        alone.update(answers([question]))
    assert alone[evaluate] == [head]  # `m.train()` never runs `Net.train(self, loader)`
    assert alone[fit] == sorted([net, head])
    assert alone[f"callers {net}"] == [fit]
    assert alone[f"callers {head}"] == sorted([fit, evaluate])
    assert alone[f"callers {helper}"] == [evaluate]
    assert answers(questions) == alone
    assert answers(questions[::-1]) == alone
    scope = build_model(files).scope
    assert scope.callers(net) is scope.callers(net)  # kept


def _stored_encoder(tmp_path: Path) -> list[tuple[str, str]]:
    """`self.enc.run(x)` on a parameter that `attach` stores on `self`: resolving it asks what
    the callers of `attach` pass, so building the caller index asks for the index."""
    files = {
        "pkg/__init__.py": "",
        "pkg/nets.py": (
            "class Encoder:\n    def run(self, x):\n        return x\n\n\n"
            "class Model:\n    def attach(self, enc):\n        self.enc = enc\n\n"
            "    def step(self, x):\n        return self.enc.run(x)\n"
        ),
        "pkg/use.py": (
            "from pkg.nets import Encoder, Model\n\n\n"
            "def main():\n    m = Model()\n    m.attach(Encoder())\n    return m.step(1)\n"
        ),
    }
    out = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append((str(path), text))
    return out


def _count_resolutions(model: ProjectModel, first: str) -> int:
    """How many calls the model resolves while `first` is asked (the caller index, the hot
    set, or the step's call), then the caller index."""
    resolve = model.resolve_call
    seen: list[str] = []

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(args[3])
        return resolve(*args, **kwargs)

    model.resolve_call = counting  # type: ignore[method-assign]
    if first == "hot":
        model.hot  # noqa: B018
    elif first == "call":
        nets = next(m for m in model.modules.values() if m.path.endswith("nets.py"))
        model.resolve_call(nets, "pkg.nets.Model", "attr", "enc.run")
    model._callers()
    model.resolve_call = resolve  # type: ignore[method-assign]
    return len(seen)


def _index(model: ProjectModel) -> dict[str, list[tuple[str, int, str, int]]]:
    return {
        gkey: [(fn.gkey, call.line, call.target, offset) for fn, call, offset in entries]
        for gkey, entries in model._callers().items()
    }


def test_caller_index_asked_while_it_is_built(tmp_path: Path) -> None:
    """Resolving `self.enc.run(x)` asks what `attach`'s callers pass while the caller index is
    built: the build is not started again inside itself; the resolution gets the index so far
    as a stand-in and is done again once the index is known. The index names `step` among
    the callers of `Encoder.run`, is the same whatever is asked first, and the build resolves
    again only what asked (not every call)."""
    files = _stored_encoder(tmp_path)
    plain = build_model(files)
    expected = _index(plain)
    run = next(gkey for gkey in plain.functions if gkey.endswith("Encoder.run#0"))
    step = next(gkey for gkey in plain.functions if gkey.endswith("Model.step#0"))
    assert [caller for caller, *_ in expected[run]] == [step]
    counts = []
    for first in ("callers", "hot", "call"):
        model = build_model(files)
        builds: list[bool] = []
        build = model._build_callers

        def once(build=build, builds=builds):  # type: ignore[no-untyped-def]
            assert not builds, "the caller index built inside its own build"
            builds.append(True)
            return build()

        model._build_callers = once  # type: ignore[method-assign]
        counts.append(_count_resolutions(model, first))
        assert builds == [True]
        assert _index(model) == expected, first
    calls = sum(len(fn.summary.calls) for fn in build_model(files).functions.values())
    assert counts[0] < 2 * calls
    nets = next(m for m in model.modules.values() if m.path.endswith("nets.py"))
    found = model.resolve_call(nets, "pkg.nets.Model", "attr", "enc.run")
    assert [fn.gkey for fn in found] == [run]
