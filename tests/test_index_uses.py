"""What a function uses as an integer index (tpulint.analysis.index_uses)."""

from __future__ import annotations

import ast

from tpulint.analysis.index_uses import index_uses, value_texts


def _uses(code: str) -> list[str]:
    return index_uses(ast.parse(code).body)


def test_scatter_and_segment_indices() -> None:
    code = (
        "a = scatter_mean(x, batch, dim=0)\n"
        "b = torch_scatter.scatter_add(x, d['mask'], dim=0)\n"
        "c = unsorted_segment_sum(x, seg, num_segments=n)\n"
        "e = global_mean_pool(h, batch=self.graph_ids)\n"
    )
    assert _uses(code) == ["batch", "d['mask']", "seg", "self.graph_ids"]


def test_method_and_torch_function_positions() -> None:
    code = (
        "x.index_select(0, rows)\n"
        "torch.index_select(x, 0, cols)\n"
        "torch.gather(x, 1, ids)\n"
        "x.scatter_add_(0, dst, src)\n"
        "torch.bincount(groups)\n"
        "labels.bincount()\n"
        "F.one_hot(classes)\n"
    )
    assert _uses(code) == ["rows", "cols", "ids", "dst", "groups", "labels", "classes"]


def test_number_of_groups_and_concatenated_indices() -> None:
    code = "n = m.max() + 1\nk = int(g.max()) + 1\nscatter_mean(x, torch.cat((a, b)), dim=0)\n"
    assert _uses(code) == ["m", "g", "a", "b"]


def test_a_mask_selection_is_not_an_index_use() -> None:
    code = "y = x[mask]\nz = torch.where(keep, x, 0)\nw = x.max() * 2\nv = dist.gather(t, out)\n"
    assert _uses(code) == []


def test_texts_agree_on_quotes() -> None:
    one = value_texts(ast.parse('d["mask"]', mode="eval").body)
    other = value_texts(ast.parse("d['mask']", mode="eval").body)
    assert one == other == ["d['mask']"]
