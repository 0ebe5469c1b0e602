"""Rule documentation generated from the rule classes (`docs/rules/TPUxxx.md`, `tpulint
explain`). The rule class is the single source: its docstring sections, metadata and
examples."""

from __future__ import annotations

from pathlib import Path

from tpulint.config.registry import FAMILY_TITLES, all_rules
from tpulint.rule_api.rule import DOC_SECTIONS, Rule

FIX_SENTENCES = {
    "safe": "Fix is always available (safe: applied by `tpulint fix --apply`).",
    "safe (sometimes)": "Fix is sometimes available (safe where offered).",
    "unsafe": "Fix is always available (unsafe: applied with `--unsafe-fixes`).",
    "unsafe (sometimes)": "Fix is sometimes available (unsafe: applied with `--unsafe-fixes`).",
    "display-only": "A suggested fix is shown (display-only: never applied automatically).",
    "display-only (sometimes)": "A suggested fix is sometimes shown (display-only).",
    "none": "No fix is available.",
}


# The docstring section that records a rule's status (stable or preview) and its evidence:
# rendered last, after the references.
STATUS_SECTION = "Status"
PREVIEW_SENTENCE = (
    "This rule is in preview: it runs only with `--preview` (or `preview = true`), until its "
    "precision on code read after it was frozen reaches 95%. See the Status section."
)


def render_rule(rule: type[Rule]) -> str:
    """The Markdown page of one rule."""
    sections = rule.doc_sections()
    default = (
        "enabled by default"
        if rule.default_enabled or getattr(rule, "always_on", False)
        else (f"opt-in (enable with `--extend-select {rule.code}`)")
    )
    status = "preview" if rule.preview else "stable"
    if rule.preview and rule.default_enabled:
        default = "in the default set with `--preview`"
    lines = [
        f"# {rule.code}: {rule.name}",
        "",
        f"*{FAMILY_TITLES.get(rule.family(), rule.family())}* · {status} · severity: "
        f"{rule.severity.value} · {default}",
        "",
        FIX_SENTENCES[rule.fix_availability()],
        "",
    ]
    if rule.preview:
        lines += [PREVIEW_SENTENCE, ""]
    for title in DOC_SECTIONS:
        body = sections.get(title)
        if body is None:
            continue
        lines += [f"## {title}", "", body, ""]
    for title, body in sections.items():
        if title not in DOC_SECTIONS and title != STATUS_SECTION:
            lines += [f"## {title}", "", body, ""]
    if STATUS_SECTION in sections:
        lines += [f"## {STATUS_SECTION}", "", sections[STATUS_SECTION], ""]
    return "\n".join(lines).rstrip() + "\n"


def render_index(rules: list[type[Rule]], corpus_counts: dict[str, int] | None = None) -> str:
    lines = [
        "# Rules",
        "",
        "Generated from the rule classes by `python -m tpulint.docs`; do not edit by hand.",
        "",
    ]
    family = None
    for rule in rules:
        if rule.family() != family:
            family = rule.family()
            lines += ["", f"## {FAMILY_TITLES.get(family, family)}", ""]
            header = "| code | name | summary | status | fix | default |"
            if corpus_counts is not None:
                header = "| code | name | summary | status | fix | default | corpus findings |"
            lines += [header, "|" + "---|" * (header.count("|") - 1)]
        default = "on" if rule.default_enabled else "opt-in"
        status = "preview" if rule.preview else "stable"
        row = (
            f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.summary} | {status} | "
            f"{rule.fix_availability()} | {default} |"
        )
        if corpus_counts is not None:
            row += f" {corpus_counts.get(rule.code, 0)} |"
        lines.append(row)
    return "\n".join(lines).strip() + "\n"


def write_docs(directory: Path) -> list[Path]:
    """Write one page per rule into `directory`; returns the written paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for rule in all_rules():
        path = directory / f"{rule.code}.md"
        path.write_text(render_rule(rule), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # python -m tpulint.docs [DIR]
    import sys

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/rules")
    for path in write_docs(target):
        print(path)
