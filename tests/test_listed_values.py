"""What `list(x)` / `tuple(x)` hold in the value inference (tpulint.analysis.inference): the
elements of a container that may hold tensors, the rows of a tensor, the elements of a
parameter; a container of host data (a list of tuples of ints) stays host data."""

from __future__ import annotations

from tpulint.analysis.inference import _listed, _not_a_tensor


def test_rows_of_a_tensor() -> None:
    assert _listed(["device"]) == [["s", ["device"]]]


def test_a_container_of_tensors_stays_one() -> None:
    assert _listed([["s", ["device"]]]) == [["s", ["device"]]]


def test_elements_of_a_parameter() -> None:
    assert _listed([["p", 1]]) == [["s", [["e", -1, [["p", 1]]]]]]


def test_a_container_of_number_tuples_is_host_data() -> None:
    assert _listed([["s", [["t", ["number"], ["number"]]]]]) is None
    assert _listed([["s", ["host"]]]) is None
    assert _listed(["host"]) is None


def test_where_isinstance_tensor_fails() -> None:
    # a parameter: a container of what it would hold; anything else: host data
    assert _not_a_tensor([["p", 0]]) == [["s", [["e", -1, [["p", 0]]]]]]
    assert _not_a_tensor(["unknown"]) == ["host"]
