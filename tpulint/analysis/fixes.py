"""Applying fixes: node replacements in one transform, and the imports fixes need.

Two views of the same fix:
- `apply_fixes` rewrites a whole module (what `tpulint fix --apply` writes);
- `fix_edits` turns one fix into minimal text edits (for JSON/SARIF and diffs of single
  findings) by regenerating only the smallest subtree that contains the replaced nodes.
Both use the same replacement and import logic, so they agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

from tpulint.analysis.positions import PositionIndex
from tpulint.datatypes.diagnostics import Edit
from tpulint.rule_api.rule import FixSpec, ImportSpec, NewNode


class _Replacer(cst.CSTTransformer):
    """Swaps nodes by identity, without descending into replaced nodes (Fixit/TorchFix)."""

    def __init__(self, mapping: Mapping[int, NewNode]) -> None:
        super().__init__()
        self.mapping = mapping

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) not in self.mapping

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        new = self.mapping.get(id(original_node))
        return updated_node if new is None else new


# --- imports ---------------------------------------------------------------------------


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def import_insertion_index(module: cst.Module) -> int:
    """Where a new import goes: after the leading block of imports (and the docstring)."""
    index = 0
    for position, statement in enumerate(module.body):
        if position == 0 and _is_docstring(statement):
            index = 1
            continue
        if _is_import_line(statement):
            index = position + 1
            continue
        break
    return index


def _module_binding(module: cst.Module, local: str) -> str | None:
    """What a top-level import binds `local` to (`xr` -> `torch_xla.runtime`)."""
    from tpulint.analysis.imports import Aliases

    aliases = Aliases()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    aliases.bind_import(small)
                elif isinstance(small, cst.ImportFrom):
                    aliases.bind_import_from(small)
    return aliases.bindings.get(local)


def import_statement(spec: ImportSpec) -> cst.SimpleStatementLine:
    if spec.name is None:
        text = f"import {spec.module}" + (f" as {spec.alias}" if spec.alias else "")
    else:
        text = f"from {spec.module} import {spec.name}" + (
            f" as {spec.alias}" if spec.alias else ""
        )
    return cst.parse_statement(text + "\n")  # type: ignore[return-value]


def missing_imports(module: cst.Module, specs: Iterable[ImportSpec]) -> list[ImportSpec]:
    """The specs whose binding is not already present at the top level."""
    out = []
    seen = set()
    for spec in specs:
        target = spec.module if spec.name is None else f"{spec.module}.{spec.name}"
        if spec.name is None and spec.alias is None:
            target = spec.module.split(".", 1)[0]
        if spec in seen or _module_binding(module, spec.local_name) == target:
            continue
        seen.add(spec)
        out.append(spec)
    return out


def _names_used(root: cst.CSTNode, skip: cst.CSTNode | None = None) -> set[str]:
    """Every Name in `root` outside import statements (and outside `skip`'s subtree)."""
    from tpulint.analysis.walker import iter_children

    used: set[str] = set()
    skipped = id(skip) if skip is not None else None
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) == skipped or isinstance(node, (cst.Import, cst.ImportFrom)):
            continue
        if isinstance(node, cst.Name):
            used.add(node.value)
        stack.extend(iter_children(node))
    return used


def _without_name(
    statement: cst.SimpleStatementLine, local: str
) -> cst.SimpleStatementLine | cst.RemovalSentinel | None:
    """`statement` with the import binding `local` removed; None if it binds nothing of it.

    Handles `from m import a, local`, `import m as local`, and `import local` / `import
    local.sub` (which bind `local`)."""
    changed = False
    new_body: list[cst.BaseSmallStatement] = []
    for small in statement.body:
        names = None
        if (
            isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar)
        ) or isinstance(small, cst.Import):
            names = small.names
        if names is None:
            new_body.append(small)
            continue
        keep = [alias for alias in names if _binding_of(alias, small) != local]
        if len(keep) == len(names):
            new_body.append(small)
            continue
        changed = True
        if keep:
            # The new last name takes over the old last one's comma: a trailing comma and the
            # line break before a closing parenthesis stay where they were.
            keep[-1] = keep[-1].with_changes(comma=names[-1].comma)
            new_body.append(small.with_changes(names=keep))
    if not changed:
        return None
    if not new_body:
        return cst.RemovalSentinel.REMOVE
    new_body[-1] = new_body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return statement.with_changes(body=new_body)


def _binding_of(alias: cst.ImportAlias, statement: cst.BaseSmallStatement) -> str:
    """The local name an import alias binds (`import a.b` binds `a`)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = alias.evaluated_name
    return name.split(".", 1)[0] if isinstance(statement, cst.Import) else name


def _import_changes(
    module: cst.Module,
    fixed_names_used: set[str],
    specs: Sequence[ImportSpec],
    unused: Sequence[str],
) -> tuple[list[cst.SimpleStatementLine], dict[int, cst.SimpleStatementLine | cst.RemovalSentinel]]:
    """(statements to insert, replacements for existing top-level import statements)."""
    to_add = [import_statement(s) for s in missing_imports(module, specs)]
    replacements: dict[int, cst.SimpleStatementLine | cst.RemovalSentinel] = {}
    for local in unused:
        if local in fixed_names_used:
            continue
        for statement in module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            current = replacements.get(id(statement), statement)
            if isinstance(current, cst.RemovalSentinel):
                continue
            new = _without_name(current, local)
            if new is not None:
                replacements[id(statement)] = new
    return to_add, replacements


# --- whole-module application ----------------------------------------------------------


def apply_fixes(module: cst.Module, fixes: Sequence[FixSpec]) -> cst.Module:
    """All `fixes` applied to `module` in one transform, then their import changes."""
    mapping: dict[int, NewNode] = {}
    for fix in fixes:
        for old, new in fix.replacements:
            mapping.setdefault(id(old), new)
    fixed = module.visit(_Replacer(mapping)) if mapping else module
    assert isinstance(fixed, cst.Module)
    specs = [s for fix in fixes for s in fix.add_imports]
    unused = [n for fix in fixes for n in fix.remove_unused_imports]
    if not specs and not unused:
        return fixed
    used = _names_used(fixed) if unused else set()
    to_add, replaced = _import_changes(fixed, used, specs, unused)
    body: list[cst.BaseStatement] = []
    for statement in fixed.body:
        new = replaced.get(id(statement), statement)
        if not isinstance(new, cst.RemovalSentinel):
            body.append(new)  # type: ignore[arg-type]
    if to_add:
        index = import_insertion_index(fixed.with_changes(body=body))
        body[index:index] = to_add
    return fixed.with_changes(body=body)


# --- edits for a single fix ------------------------------------------------------------


def _anchor_for(fix: FixSpec, parents: Mapping[int, cst.CSTNode]) -> cst.CSTNode | None:
    """The smallest node whose regeneration covers every replacement of `fix`."""
    chains: list[list[cst.CSTNode]] = []
    for old, new in fix.replacements:
        node: cst.CSTNode | None = old
        if not isinstance(new, cst.CSTNode):
            node = parents.get(id(old))  # removal/flatten: regenerate the parent
        chain: list[cst.CSTNode] = []
        while node is not None:
            chain.append(node)
            node = parents.get(id(node))
        if not chain:
            return None
        chains.append(list(reversed(chain)))
    if not chains:
        return None
    anchor = None
    for level in zip(*chains, strict=False):
        first = level[0]
        if all(n is first for n in level):
            anchor = first
        else:
            break
    return anchor


def anchors_for(fixes: Iterable[FixSpec], parents: Mapping[int, cst.CSTNode]) -> list[cst.CSTNode]:
    out = []
    for fix in fixes:
        anchor = _anchor_for(fix, parents)
        if anchor is not None:
            out.append(anchor)
    return out


def _codegen_in_context(
    module: cst.Module, node: cst.CSTNode, parents: Mapping[int, cst.CSTNode], original: cst.CSTNode
) -> str:
    """Code for `node`, indented as `original` (the node it replaces) is in the module."""
    indents: list[str] = []
    current = parents.get(id(original))
    while current is not None:
        if isinstance(current, cst.IndentedBlock):
            indents.append(current.indent if current.indent is not None else module.default_indent)
        current = parents.get(id(current))
    state = CodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline
    )
    state.indent_tokens.extend(reversed(indents))
    node._codegen(state)
    return "".join(state.tokens)


def _trimmed_edit(positions: PositionIndex, start: int, old: str, new: str) -> Edit | None:
    if old == new:
        return None
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    begin = start + prefix
    end = start + len(old) - suffix
    return Edit(positions.location(begin), positions.location(end), new[prefix : len(new) - suffix])


def fix_edits(
    module: cst.Module,
    fix: FixSpec,
    positions: PositionIndex,
    parents: Mapping[int, cst.CSTNode],
) -> tuple[Edit, ...]:
    """Minimal text edits equivalent to applying `fix` alone."""
    edits: list[Edit] = []
    mapping: dict[int, NewNode] = {}
    for old, new in fix.replacements:
        mapping.setdefault(id(old), new)
    anchor = _anchor_for(fix, parents)
    code = positions.code
    new_anchor: cst.CSTNode | None = None
    if anchor is not None and mapping:
        span = positions.span(anchor)
        replaced = anchor.visit(_Replacer(mapping))
        if isinstance(replaced, cst.CSTNode):
            new_anchor = replaced
            new_code = _codegen_in_context(module, replaced, parents, anchor)
        else:
            new_code = ""
        old_code = code[span.outer_start : span.outer_end]
        edit = _trimmed_edit(positions, span.outer_start, old_code, new_code)
        if edit is not None:
            edits.append(edit)
    if fix.add_imports or fix.remove_unused_imports:
        used: set[str] = set()
        if fix.remove_unused_imports:
            # Names used after the fix: everywhere but the anchor, plus the new anchor.
            used = _names_used(module, skip=anchor)
            if new_anchor is not None:
                used |= _names_used(new_anchor)
        to_add, replaced_imports = _import_changes(
            module, used, fix.add_imports, fix.remove_unused_imports
        )
        for statement in module.body:
            new = replaced_imports.get(id(statement))
            if new is None:
                continue
            span = positions.span(statement)
            old_code = code[span.outer_start : span.outer_end]
            new_code = "" if isinstance(new, cst.RemovalSentinel) else module.code_for_node(new)
            edit = _trimmed_edit(positions, span.outer_start, old_code, new_code)
            if edit is not None:
                edits.append(edit)
        if to_add:
            index = import_insertion_index(module)
            text = "".join(module.code_for_node(s) for s in to_add)
            if index < len(module.body):
                offset = positions.span(module.body[index]).outer_start
            else:
                offset = len(code)
                if code and not code.endswith("\n"):
                    text = module.default_newline + text
            location = positions.location(offset)
            edits.append(Edit(location, location, text))
    edits.sort(key=lambda e: (e.start, e.end))
    return tuple(edits)


def positions_needed(
    module: cst.Module, fixes: Iterable[FixSpec], parents: Mapping[int, cst.CSTNode]
) -> list[cst.CSTNode]:
    """Nodes whose spans `fix_edits` will ask for (resolved in one pass beforehand)."""
    nodes: list[cst.CSTNode] = []
    any_imports = False
    for fix in fixes:
        anchor = _anchor_for(fix, parents)
        if anchor is not None:
            nodes.append(anchor)
        if fix.add_imports or fix.remove_unused_imports:
            any_imports = True
    if any_imports:
        nodes.extend(module.body)
    return nodes
