"""What runs in the parent after the child has ended: the event log in, the report out.

Steps and phases (steps.py), the four checks (check_*.py), their causes and rule attribution,
the verdict (analysis.py), the report types (report.py) and the text rendering (render.py).
Standard library only: nothing here imports torch, torch_xla or lightning.
"""
