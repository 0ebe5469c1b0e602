"""Layer 4, analysis: one semantics for what a value is, shared by the project model and the
rules. The project model on `ast` (summary, project, modules, hooks, guards); the one value
inference on `ast` (inference, with the tables of value_tables), which the summaries keep and
the rules ask by position (value_query: a libcst node's span finds its `ast` twin; values holds
the kinds the rules see); the per-file context on libcst (context, imports, semantic, walker,
positions), LightningCLI YAML configs (yaml_config), suppression comments (suppression) and
applying fixes (fixes)."""
