"""What the equivalence recorder keeps of the state the user's code computes
(runtime/child/equivalence.py): host values with their Python types, device tensors by type
only, the framework's own attributes left out. Needs torch and Lightning, not a training."""

from __future__ import annotations

from collections import defaultdict

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
L = pytest.importorskip("lightning")

from tpulint.runtime.child.equivalence import _framework_names, _user_attributes, encode  # noqa: E402


class Module(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 2)
        self.epoch_losses = [1.5, 2.0]
        self.best = float("nan")
        self.name = "run"
        self.per_class = defaultdict(list, {"cat": [1, 2]})
        self.preds = torch.tensor([1, 0, 3])
        self.table = np.arange(4, dtype=np.float32)


def test_user_attributes_are_recorded_with_their_types() -> None:
    module = Module()
    attributes = _user_attributes(module, _framework_names(module))
    assert set(attributes) == {"epoch_losses", "best", "name", "per_class", "preds", "table"}
    assert encode(attributes["epoch_losses"]) == {
        "t": "list",
        "n": 2,
        "items": [{"t": "float", "v": 1.5}, {"t": "float", "v": 2.0}],
    }
    assert encode(attributes["best"]) == {"t": "float", "v": "nan"}
    assert encode(attributes["name"]) == {"t": "str", "v": "run", "n": 3}
    per_class = encode(attributes["per_class"])
    assert per_class["t"] == "collections.defaultdict" and per_class["n"] == 1
    assert per_class["items"]["'cat'"]["items"][1] == {"t": "int", "v": 2}
    preds = encode(attributes["preds"])
    assert preds["t"] == "torch.Tensor" and preds["device"] == "cpu"
    assert (preds["dtype"], preds["shape"], preds["sum"], preds["head"]) == (
        "int64",
        [3],
        4.0,
        [1.0, 0.0, 3.0],
    )
    table = encode(attributes["table"])
    assert (table["t"], table["dtype"], table["absmax"]) == ("numpy.ndarray", "float32", 3.0)


def test_numbers_and_tensors_of_one_value_differ_in_type() -> None:
    """What a rewrite that keeps a tensor where a float was leaves behind."""
    assert encode(0.25)["t"] == "float"
    as_tensor = encode(torch.tensor(0.25))
    assert as_tensor["t"] == "torch.Tensor" and as_tensor["shape"] == []
    assert encode(np.float32(0.25)) == {"t": "numpy.float32", "v": 0.25}


def test_other_objects_are_recorded_by_type_and_deep_values_are_cut() -> None:
    assert encode(torch.nn.Linear(2, 2)) == {"t": "torch.nn.modules.linear.Linear"}
    nested: list = [[[[["deep"]]]]]
    assert encode(nested)["items"][0]["items"][0]["items"][0]["items"][0] == {"t": "list"}
