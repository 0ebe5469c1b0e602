"""Why the dynamic-shape and host-sync findings without a fix have none, counted on the corpus.

    python bench/rewrite_gaps.py [--corpus PATH] [--json OUT]

Checks the corpus with the TPU1xx and TPU2xx rules, keeps the findings whose fix is neither
safe nor unsafe (display-only suggestions count as no fix), and sorts each into one reason by
the code around it: what the value is used for (read with Python's ast). The reasons are the
ones docs/corpus-report.md explains; a classification by syntax, so it is checked there by
reading a sample. Prints, per rule, the findings, those with a fix, and the others by reason.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tpulint.config.settings import Config  # noqa: E402
from tpulint.runner.paths import check_paths  # noqa: E402

DEFAULT_CORPUS = ROOT / "bench" / ".cache" / "corpus"

# Calls whose arguments are sizes or shapes (an `.item()` there sizes a tensor or a loop).
_SIZE_CALLS = {
    "range", "arange", "zeros", "ones", "full", "empty", "randn", "rand", "randint", "linspace",
    "zeros_like", "ones_like", "full_like", "view", "reshape", "expand", "repeat", "narrow",
    "split", "chunk", "pad", "new_zeros", "new_ones", "new_full", "new_empty", "interpolate",
}  # fmt: skip
_TEXT_CALLS = {"print", "format", "info", "warning", "warn", "debug", "error", "log_text"}
_RANDOM = {"rand", "randint", "randn", "rand_like", "randint_like", "bernoulli", "multinomial"}
# Uses of a bound selection that the rewrites handle: not the reason it has no fix.
_ELEMENTWISE = {
    "sum", "mean", "max", "min", "amax", "amin", "numel", "abs", "pow", "exp", "log", "sqrt",
    "float", "double", "detach", "clamp", "sigmoid", "relu", "neg", "square",
}  # fmt: skip
_RESHAPES = {
    "view", "reshape", "unsqueeze", "squeeze", "flatten", "unflatten", "permute", "transpose",
    "t", "split", "chunk", "expand", "repeat", "T", "tolist", "cpu", "numpy",
}  # fmt: skip


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


class _File:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.tree = ast.parse(text)
        self.parents: dict[int, ast.AST] = {}
        self.at: dict[tuple[int, int], list[ast.AST]] = defaultdict(list)
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.expr):
                self.at[(node.lineno, node.col_offset)].append(node)

    def node(self, line: int, column: int, end_line: int, end_column: int) -> ast.AST | None:
        """The expression starting at (line, column) (1-based characters), the one ending
        where the finding ends when several start there."""
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        col = len(text[: column - 1].encode("utf-8"))
        found = self.at.get((line, col), [])
        if not found:
            return None
        end_text = self.lines[end_line - 1] if end_line <= len(self.lines) else ""
        end_col = len(end_text[: end_column - 1].encode("utf-8"))
        for node in found:
            if (node.end_lineno, node.end_col_offset) == (end_line, end_col):
                return node
        return found[0]

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def ancestors(self, node: ast.AST):
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def statement(self, node: ast.AST) -> ast.AST | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, ast.stmt):
                return ancestor
        return None


def _inside(node: ast.AST, container: ast.AST | list | None) -> bool:
    if container is None:
        return False
    roots = container if isinstance(container, list) else [container]
    return any(node is n for root in roots for n in ast.walk(root))


def _local_uses(f: _File, statement: ast.stmt) -> list[ast.Name]:
    """The later reads, in the same function, of the names `statement` binds."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign):
        targets = [statement.target]
    else:
        return []
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if not names or not all(isinstance(t, (ast.Name, ast.Tuple)) for t in targets):
        return []
    scope: ast.AST = f.tree
    for ancestor in f.ancestors(statement):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = ancestor
            break
    end = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
    return sorted(
        (
            n
            for n in ast.walk(scope)
            if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.id in names
            and (n.lineno, n.col_offset) > end
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )


def _through_local(f: _File, statement: ast.stmt, classify, fallback: str) -> str:
    """The reason of the first later use of the local that says more than `fallback`."""
    for use in _local_uses(f, statement):
        why = classify(f, use, follow=False)
        if why != fallback:
            return why
    return fallback


def _in_test(f: _File, node: ast.AST) -> bool:
    for ancestor in f.ancestors(node):
        if isinstance(ancestor, (ast.If, ast.While, ast.IfExp, ast.Assert)) and _inside(
            node, ancestor.test
        ):
            return True
        if isinstance(ancestor, ast.comprehension) and _inside(node, ancestor.ifs):
            return True
        if isinstance(ancestor, ast.stmt):
            return False
    return False


def item_reason(f: _File, node: ast.AST, follow: bool = True) -> str:
    """TPU101: what the number read back with `.item()` is used for."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        if isinstance(receiver, ast.Call) and _name(receiver.func) in _RANDOM:
            return "a random draw read on the host (Python-side randomness)"
    if _in_test(f, node):
        return "decides Python control flow (`if`, `while`, `assert`)"
    for ancestor in f.ancestors(node):
        if isinstance(ancestor, ast.stmt):
            break
        if isinstance(ancestor, ast.Subscript) and _inside(node, ancestor.slice):
            return "used as an index, a slice bound or a size"
        if isinstance(ancestor, ast.Call):
            name = _name(ancestor.func)
            if name in _SIZE_CALLS:
                return "used as an index, a slice bound or a size"
            if name in ("append", "extend", "add", "insert"):
                return "collected into a host-side list"
            if name in _TEXT_CALLS or isinstance(ancestor, ast.JoinedStr):
                return "formatted into text, printed or logged as text"
        if isinstance(ancestor, ast.JoinedStr):
            return "formatted into text, printed or logged as text"
        if isinstance(ancestor, (ast.ListComp, ast.List, ast.Dict, ast.DictComp)):
            return "collected into a host-side list"
    statement = f.statement(node)
    if isinstance(statement, ast.Return):
        return "returned to the caller as a Python number"
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if all(isinstance(t, (ast.Name, ast.Tuple)) for t in targets):
            local = "kept in a local that host code uses as a Python number"
            return _through_local(f, statement, item_reason, local) if follow else local
        return "stored in an attribute or a container read by host code"
    return "passed to host code as a Python number"


def transfer_reason(f: _File, node: ast.AST, message: str) -> str:
    """TPU103: what the copy to the host is for."""
    code = message.split("`")[1] if "`" in message else ""
    for ancestor in [node, *f.ancestors(node)]:
        if isinstance(ancestor, ast.stmt):
            break
        if isinstance(ancestor, ast.Call) and _name(ancestor.func) == "pack_padded_sequence":
            return "lengths for `pack_padded_sequence`, which requires a CPU tensor"
    if code.startswith("print("):
        return "printed"
    if ".numpy()" in code or "np." in code:
        return "converted to numpy for a host library"
    if ".tolist()" in code:
        return "turned into Python lists (ids to text, per-item host code)"
    if code.split("(")[0] in ("int", "float", "bool", "round") or code.endswith(".item()"):
        return "read as a Python number for host code"
    return "copied to host memory for host-side code (decoding, CPU metrics, outputs)"


def branch_reason(f: _File, node: ast.AST) -> str:
    """TPU104: what the branch on a tensor value does."""
    statement = f.statement(node) if not isinstance(node, ast.stmt) else node
    for ancestor in [node, *f.ancestors(node)]:
        if isinstance(ancestor, ast.IfExp):
            return "a conditional expression choosing between computations"
        if isinstance(ancestor, ast.comprehension):
            return "filters a comprehension"
        if isinstance(ancestor, ast.stmt):
            break
    if isinstance(statement, ast.Assert):
        return "`assert` on tensor values"
    if isinstance(statement, ast.While):
        return "`while` loop on tensor values"
    if not isinstance(statement, ast.If):
        return "other"
    body = statement.body + statement.orelse
    nodes = [n for s in body for n in ast.walk(s)]
    if any(isinstance(n, (ast.Return, ast.Raise)) for n in nodes):
        return "the branch returns or raises"
    if any(isinstance(n, (ast.Break, ast.Continue)) for n in nodes):
        return "the branch breaks or continues a loop"
    calls = [n for n in nodes if isinstance(n, ast.Call)]
    if any(_name(c.func) in _TEXT_CALLS | {"log", "log_dict"} for c in calls):
        return "the branch logs, warns or prints"
    if len(body) > 1 or any(not isinstance(s, (ast.Assign, ast.AugAssign)) for s in body):
        return "the branch runs other code (several statements, calls, loops)"
    return "a guarded update with no exact `torch.where` form (see the rule page)"


def shape_op_reason(f: _File, node: ast.AST, message: str) -> str:
    """TPU201: which data-dependent shape op, whose output is used as such."""
    name = _name(node.func) if isinstance(node, ast.Call) else ""
    code = message.split("`")[1] if "`" in message else ""
    if name in ("nonzero", "argwhere", "where") or "nonzero" in code or "argwhere" in code:
        return "positions used (gathered, scattered, looped over, returned)"
    if name in ("unique", "unique_consecutive") or "unique" in code:
        return "unique values or inverse indices used (no known class count)"
    if name == "masked_select" or "masked_select" in code:
        return "compact values passed on, reshaped or turned into lists"
    if name == "repeat_interleave" or "repeat_interleave" in code:
        return "`repeat_interleave` with per-element repeats"
    return "other"


def mask_reason(f: _File, node: ast.AST, follow: bool = True) -> str:
    """TPU202: what the selected (compact) tensor is used for."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        statement = f.statement(node)
        if isinstance(statement, ast.AugAssign):
            return "updated in place through the mask (`x[m] += v`)"
        return "written with one value per selected element (`x[m] = y_compact`)"
    for ancestor in f.ancestors(node):
        if isinstance(ancestor, (ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)):
            return "one selection per group (a comprehension or a loop over groups)"
        if isinstance(ancestor, ast.For):
            names = {n.id for n in ast.walk(ancestor.target) if isinstance(n, ast.Name)}
            mask = node.slice if isinstance(node, ast.Subscript) else None
            used = {n.id for n in ast.walk(mask) if isinstance(n, ast.Name)} if mask else set()
            if names & used:
                return "one selection per group (a comprehension or a loop over groups)"
        if isinstance(ancestor, ast.FunctionDef):
            break
    parent = f.parent(node)
    if not follow and isinstance(parent, ast.Attribute) and parent.attr in _ELEMENTWISE:
        return "bound to a local that is kept, returned or counted (not only reduced)"
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return "compact tensor reshaped, sliced or indexed again"
    if isinstance(parent, ast.Attribute) and parent.attr in _RESHAPES:
        return "compact tensor reshaped, sliced or indexed again"
    if isinstance(parent, ast.Call) and node in parent.args:
        if _name(parent.func) in ("cat", "stack", "concat", "hstack", "vstack"):
            return "passed to a module, a metric, a function or `torch.cat`"
        return "passed to a module, a metric, a function or `torch.cat`"
    if isinstance(parent, (ast.List, ast.Tuple)) and isinstance(f.parent(parent), ast.Call):
        return "passed to a module, a metric, a function or `torch.cat`"
    if isinstance(parent, ast.keyword):
        return "passed to a module, a metric, a function or `torch.cat`"
    statement = f.statement(node)
    if isinstance(statement, ast.Return) and statement.value is node:
        return "returned"
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and (
        statement.value is node
        or (isinstance(statement.value, ast.Tuple) and node in statement.value.elts)
    ):
        local = "bound to a local that is kept, returned or counted (not only reduced)"
        return _through_local(f, statement, mask_reason, local) if follow else local
    if isinstance(statement, ast.Assign) and isinstance(
        statement.targets[0], (ast.Subscript, ast.Attribute)
    ):
        return "stored in a container or an attribute"
    return "in an expression with no exact masked form (partial reductions, compact operands)"


_FIXED_REASONS = {
    "TPU203": "Python loop over a tensor dimension: vectorising rewrites the algorithm",
    "TPU204": "packed sequences: running on padded batches with masks is a model change",
    "TPU205": "a size read from tensor values: the static size (a padded length, a configured"
    " maximum) is a decision about the data",
}


# What the deferral of collected values (rules/rewrite/deferral.py) says when it offers no
# fix: "(no fix: <why>)" at the end of a TPU101/TPU103 message, by the words of <why>.
_DEFERRAL_REASONS = (
    ("read every step", "collected for later, but also read every step"),
    ("not visibly small", "collected for later, but too large per step to keep on the device"),
    ("is not emptied", "collected for later, kept across epochs (not emptied at the epoch end)"),
    ("also filled", "collected for later in several places"),
    ("does not run only", "collected for later, read by code that may run at any time"),
    ("passed to", "collected for later, handed to code that may keep it"),
    ("tensor by tensor", "collected for later, read tensor by tensor"),
    ("array by array", "collected for later, read array by array"),
    ("Python lists", "collected for later as Python lists (`.tolist()`)"),
    ("not a Lightning module", "collected in an object that is not a Lightning module"),
    ("no epoch end", "collected for later in a loop with no epoch end"),
)


def deferral_reason(message: str) -> str | None:
    """The deferral's reason for no fix, in a few words, when the message gives one."""
    if "(no fix: " not in message:
        return None
    why = message.rsplit("(no fix: ", 1)[1]
    for words, reason in _DEFERRAL_REASONS:
        if words in why:
            return reason
    return "collected for later, in a form the deferral does not rewrite"


def reason(code: str, f: _File | None, node: ast.AST | None, message: str) -> str:
    if code in _FIXED_REASONS:
        return _FIXED_REASONS[code]
    deferred = deferral_reason(message)
    if deferred is not None:
        return deferred
    if f is None or node is None:
        return "not located"
    if code == "TPU101":
        return item_reason(f, node)
    if code == "TPU103":
        return transfer_reason(f, node, message)
    if code == "TPU104":
        return branch_reason(f, node)
    if code == "TPU201":
        return shape_op_reason(f, node, message)
    if code == "TPU202":
        return mask_reason(f, node)
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--json", type=Path, help="also write every finding with its reason")
    args = parser.parse_args()
    pkgs = args.corpus.resolve() / "pkgs"
    config = Config.from_mapping({"select": ["TPU1", "TPU2"]}, root=args.corpus.resolve())
    run = check_paths([str(pkgs)], config, use_cache=False)
    files: dict[str, _File | None] = {}
    totals: Counter[str] = Counter()
    fixed: Counter[str] = Counter()
    reasons: dict[str, Counter[str]] = defaultdict(Counter)
    rows = []
    for d in run.diagnostics:
        totals[d.code] += 1
        if d.fixable(unsafe=True):
            fixed[d.code] += 1
            continue
        path = str((Path.cwd() / d.path).resolve()) if not Path(d.path).is_absolute() else d.path
        if path not in files:
            try:
                files[path] = _File(Path(path).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                files[path] = None
        f = files[path]
        node = f.node(d.start.line, d.start.column, d.end.line, d.end.column) if f else None
        why = reason(d.code, f, node, d.message)
        reasons[d.code][why] += 1
        rows.append({"code": d.code, "path": d.path, "line": d.start.line, "reason": why})
    total = sum(totals.values())
    with_fix = sum(fixed.values())
    share = f"{100 * with_fix / total:.0f}%" if total else "-"
    print(f"TPU1xx + TPU2xx: {total} findings, {with_fix} with a fix ({share})")
    for code in sorted(totals):
        left = totals[code] - fixed[code]
        print(f"\n{code}: {totals[code]} findings, {fixed[code]} with a fix, {left} without")
        for why, count in reasons[code].most_common():
            print(f"  {count:4d}  {why}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
