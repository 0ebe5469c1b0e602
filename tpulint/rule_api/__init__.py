"""Layer 3, rule API: the Rule base class and its examples (rule), tpulint's own TPLxxx
diagnostics as rules (meta_rules), and the libcst edits fixes share (cst_helpers)."""
