"""What runs inside the training child process: it imports torch, torch_xla and lightning.

The parent starts `python -m tpulint.runtime.child RUN_DIR/spec.json` (main.py) and learns
everything from the event log the child writes (tpulint.runtime.events). Nothing in the
parent (api, command, runner, judge/) imports these modules; a test keeps it so.
"""
