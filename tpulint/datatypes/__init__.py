"""Layer 1, data types: what a check produces (diagnostics, fixes, edits) and the facts about
source text every layer relies on (roundtrip). Imports nothing else of tpulint."""
