"""Import aliases: what `pl`, `L`, `xm`, `DataLoader` are bound to in a file.

A light replacement for libcst's QualifiedNameProvider (which needs full scope analysis and
costs several times the parse): imports are recorded as they are met, in source order, so a
conditional `import mlx.nn as nn` rebinds `nn` for the code that follows it.
"""

from __future__ import annotations

import libcst as cst

# Pure text logic, shared with the project model (which must not import libcst).
from tpulint.analysis.summary import resolve_relative


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def module_name_of(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{module_name_of(node.value)}.{node.attr.value}"
    return ""


class Aliases:
    """Local name -> qualified name, for the names bound by import statements."""

    __slots__ = ("bindings", "depth", "is_package", "late", "module")

    def __init__(
        self,
        module: str | None = None,
        is_package: bool = False,
        bindings: dict[str, str] | None = None,
    ) -> None:
        self.module = module
        self.is_package = is_package
        self.bindings: dict[str, str] = dict(bindings) if bindings else {}
        # The module-level imports of the whole file (`late_bindings`), and how many function
        # bodies the walk is in: a function reads a global when it is called, so an import the
        # module runs after the `def` (`if __name__ == "__main__": import ... as xm`) names
        # what the function's `xm.f()` calls. Module-level code reads names in source order.
        self.late: dict[str, str] = {}
        self.depth = 0

    def copy(self) -> Aliases:
        copied = Aliases(self.module, self.is_package, self.bindings)
        copied.late = self.late
        copied.depth = self.depth
        return copied

    def bind_late(self, module: cst.Module) -> None:
        """Record the imports the module's top level runs anywhere (in `if`, `try`, `with`
        and loop blocks, not in functions or classes), for the function bodies walked before
        them. A name imported as different modules in different places is left out."""
        found = Aliases(self.module, self.is_package)
        ambiguous: set[str] = set()
        stack: list[cst.CSTNode] = list(reversed(module.body))
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                before = dict(found.bindings)
                if isinstance(node, cst.Import):
                    found.bind_import(node)
                else:
                    found.bind_import_from(node)
                ambiguous.update(
                    name
                    for name, target in found.bindings.items()
                    if name in before and before[name] != target
                )
                continue
            if isinstance(node, cst.SimpleStatementLine):
                stack.extend(reversed(node.body))
                continue
            if isinstance(node, cst.BaseSuite):
                stack.extend(reversed(node.body))  # type: ignore[arg-type]
                continue
            # if/elif/else, try/except/else/finally, with, for, while (and their blocks)
            for attribute in ("finalbody", "orelse", "handlers", "body"):
                part = getattr(node, attribute, None)
                if isinstance(part, (list, tuple)):
                    stack.extend(reversed(part))
                elif isinstance(part, cst.CSTNode):
                    stack.append(part)
        # An import in a function that declares its name `global` (`global xm` then `import
        # torch_xla.core.xla_model as xm` in the function that sets up the TPU run) binds the
        # module's global too: the functions that read `xm` after it ran call that module.
        for name, target in _global_imports(module, self.module, self.is_package).items():
            if found.bindings.get(name, target) != target:
                ambiguous.add(name)
            found.bindings[name] = target
        self.late = {k: v for k, v in found.bindings.items() if k not in ambiguous}

    def bind_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = module_name_of(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bindings[alias.asname.name.value] = full
            else:
                # `import a.b.c` binds `a` to the package `a`.
                root = full.split(".", 1)[0]
                self.bindings[root] = root

    def bind_import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        level = len(node.relative)
        base = resolve_relative(self.module, self.is_package, level, module_name_of(node.module))
        if base is None:
            return
        for alias in node.names:
            name = module_name_of(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.bindings[local] = f"{base}.{name}"

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The qualified name of a Name/Attribute chain whose root is an imported name."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        return self.qualify_dotted(dotted)

    def qualify_dotted(self, dotted: str) -> str | None:
        root, _, rest = dotted.partition(".")
        target = self.bindings.get(root)
        if target is None and self.depth:
            target = self.late.get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def root_module(self, node: cst.BaseExpression) -> str | None:
        """The top-level package a Name/Attribute chain comes from (`np.x.y` -> `numpy`)."""
        while isinstance(node, cst.Attribute):
            node = node.value
        if isinstance(node, cst.Name):
            target = self.bindings.get(node.value)
            if target is None and self.depth:
                target = self.late.get(node.value)
            if target is not None:
                return target.split(".", 1)[0]
        return None


def _children(statement: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements a statement holds: a compound statement's blocks (`if`/`elif`/`else`,
    `try`/`except`/`finally`, loops, `with`, a class body), a line's small statements."""
    if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return list(statement.body)
    out: list[cst.CSTNode] = []
    for attribute in ("body", "orelse", "handlers", "finalbody"):
        part = getattr(statement, attribute, None)
        parts = part if isinstance(part, (list, tuple)) else [part]
        for piece in parts:
            if isinstance(piece, cst.BaseSuite):
                out.extend(piece.body)
            elif isinstance(piece, (cst.ExceptHandler, cst.Else, cst.Finally)):
                out.extend(_children(piece))
            elif isinstance(piece, cst.If):
                out.append(piece)
    return out


def _global_imports(module: cst.Module, name: str | None, is_package: bool) -> dict[str, str]:
    """The names that imports in function bodies bind at module level: those the function
    declares `global` (a name imported as different modules is left out)."""
    out: dict[str, str] = {}
    ambiguous: set[str] = set()
    functions: list[cst.FunctionDef] = []
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef):
            functions.append(node)
        stack.extend(_children(node))
    for function in functions:
        declared: set[str] = set()
        found = Aliases(name, is_package)
        inner: list[cst.CSTNode] = list(function.body.body)
        while inner:
            node = inner.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue  # its own scope
            if isinstance(node, cst.Global):
                declared.update(n.name.value for n in node.names)
            elif isinstance(node, cst.Import):
                found.bind_import(node)
            elif isinstance(node, cst.ImportFrom):
                found.bind_import_from(node)
            else:
                inner.extend(_children(node))
        for local, target in found.bindings.items():
            if local in declared:
                if out.get(local, target) != target:
                    ambiguous.add(local)
                out[local] = target
    return {k: v for k, v in out.items() if k not in ambiguous}
