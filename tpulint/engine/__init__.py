"""Layer 6, engine: checking and fixing one file's source (source: check_source, fix_source),
on a large-stack thread for deeply nested code (deep_stack). It reaches the rules (layer 5,
`tpulint.rules`) only through the registry and the Rule interface."""
