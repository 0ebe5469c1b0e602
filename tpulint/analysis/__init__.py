"""Layer 4, analysis: one semantics for what a value is, shared by the project model and the
rules. The project model on `ast` (summary, project, modules, hooks, guards), the per-file
context on libcst (context, imports, semantic, values, walker, positions), LightningCLI YAML
configs (yaml_config), suppression comments (suppression) and applying fixes (fixes)."""
