"""One problem, one finding: merging the reports of one walk before they get positions.

Two cases, both decided from the rules' declarations and the tree, never from a rule's code:

- A rule that reports several nodes of one statement (four tensors formatted in one
  f-string, the write and the select of `a[~m] = b[~m2]`, two `.cpu()` in one call) reports
  one problem: the first node keeps the finding, the others become its related places, and
  their fixes are applied with it (`Rule.one_per_statement`).
- A rule that declares `folds_into = (codes...)` reports the same problem as those rules when
  its node, or one of its related places, overlaps one of their nodes in that node's
  statement (a size read with `.item()` reported as a host read and as a data-dependent size;
  an offset read with `int(self.ptr)` and used in a later slice): its finding is folded into
  theirs, its `note` appended to their message, its node kept as a related place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import libcst as cst

from tpulint.rule_api.rule import FixSpec, RelatedNode, Report

MAX_LISTED = 3  # other places named in a merged message; the rest are counted


def _statement(node: cst.CSTNode, parents: Mapping[int, cst.CSTNode]) -> cst.CSTNode | None:
    current = parents.get(id(node))
    while current is not None:
        if isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return current
        current = parents.get(id(current))
    return None


def _ancestors(node: cst.CSTNode, parents: Mapping[int, cst.CSTNode]) -> set[int]:
    out = set()
    current = parents.get(id(node))
    while current is not None:
        out.add(id(current))
        current = parents.get(id(current))
    return out


def _overlap(a: cst.CSTNode, b: cst.CSTNode, parents: Mapping[int, cst.CSTNode]) -> bool:
    return a is b or id(a) in _ancestors(b, parents) or id(b) in _ancestors(a, parents)


def _merged_fix(reports: list[Report], parents: Mapping[int, cst.CSTNode]) -> FixSpec | None:
    """The fixes of one statement's reports as one fix: every replacement, the least safe
    applicability. Replacements of nested nodes cannot be applied together: then only the
    first report's fix is kept."""
    specs = [r.fix for r in reports if r.fix is not None]
    if len(specs) <= 1:
        return specs[0] if specs else None
    targets = [old for spec in specs for old, _ in spec.replacements]
    for i, a in enumerate(targets):
        for b in targets[i + 1 :]:
            if _overlap(a, b, parents):
                return specs[0]
    worst = max((s.applicability for s in specs), key=lambda a: a.rank)
    imports = tuple(dict.fromkeys(i for s in specs for i in s.add_imports))
    unused = tuple(dict.fromkeys(n for s in specs for n in s.remove_unused_imports))
    return FixSpec(
        applicability=worst,
        message=specs[0].message,
        replacements=[pair for s in specs for pair in s.replacements],
        add_imports=imports,
        remove_unused_imports=unused,
    )


def merge_reports(
    reports: list[Report],
    parents: Mapping[int, cst.CSTNode],
    code_for_node: Callable[[cst.CSTNode], str],
) -> list[Report]:
    """The reports with one finding per rule and statement, and folded findings merged into
    the findings they repeat."""
    if len(reports) < 2:
        return reports

    def short(node: cst.CSTNode) -> str:
        text = " ".join(code_for_node(node).split())
        return text if len(text) <= 40 else text[:39] + "…"

    statements = [_statement(r.node, parents) for r in reports]
    # 1. Same rule, same statement.
    groups: dict[tuple[str, int], list[int]] = {}
    for index, (report, statement) in enumerate(zip(reports, statements, strict=True)):
        if statement is None or not report.rule.one_per_statement:
            continue
        groups.setdefault((report.rule.code, id(statement)), []).append(index)
    dropped: set[int] = set()
    merged: dict[int, Report] = {}
    for indexes in groups.values():
        if len(indexes) < 2:
            continue
        group = [reports[i] for i in indexes]
        first, others = group[0], group[1:]
        # The same expression reported twice (`p[i].item()` written twice) is one place.
        distinct: list[Report] = []
        seen_text = {code_for_node(first.node)}
        for other in others:
            text = code_for_node(other.node)
            if text not in seen_text:
                seen_text.add(text)
                distinct.append(other)
        listed = ", ".join(f"`{short(o.node)}`" for o in distinct[:MAX_LISTED])
        more = len(distinct) - MAX_LISTED
        message = first.message
        if distinct:
            message += f" (and in the same statement: {listed}"
            message += f" and {more} more)" if more > 0 else ")"
        merged[indexes[0]] = Report(
            first.rule,
            first.node,
            message,
            _merged_fix(group, parents),
            related=[
                *first.related,
                *(RelatedNode(o.node, f"also in this statement: {o.message}") for o in others),
                *(r for o in others for r in o.related),
            ],
            note=first.note,
            # One merged finding depends on other files if any of its parts did.
            project_dependent=any(r.project_dependent for r in group),
        )
        dropped.update(indexes[1:])
    current = [merged.get(i, r) for i, r in enumerate(reports)]
    # 2. Findings folded into another rule's finding of the same expression: the finding's
    # own node, or one of its related places (the host read a later offset comes from),
    # overlaps the other finding's node in that node's statement.
    for index, report in enumerate(current):
        if index in dropped or not report.rule.folds_into:
            continue
        places = [report.node, *(r.node for r in report.related if isinstance(r, RelatedNode))]
        for target_index, target in enumerate(current):
            if (
                target_index == index
                or target_index in dropped
                or target.rule.code not in report.rule.folds_into
                or statements[target_index] is None
                or not any(
                    _statement(place, parents) is statements[target_index]
                    and _overlap(place, target.node, parents)
                    for place in places
                )
            ):
                continue
            note = report.note or f"{report.rule.summary} ({report.rule.code})"
            current[target_index] = Report(
                target.rule,
                target.node,
                f"{target.message}; {note}",
                target.fix,
                related=[
                    *target.related,
                    RelatedNode(report.node, report.message),
                    *report.related,
                ],
                note=target.note,
                project_dependent=target.project_dependent or report.project_dependent,
            )
            dropped.add(index)
            break
    return [r for i, r in enumerate(current) if i not in dropped]
