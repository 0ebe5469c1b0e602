"""`python -m tpulint.runtime.child RUN_DIR/spec.json`: the training child's entry point."""

import os
import sys

from tpulint.runtime.child.main import main

status = main()
# Everything the parent needs is in the event log (flushed per line). Tearing down the XLA
# runtime, the replica pool and Lightning's multiprocessing manager takes seconds and can hang
# after a failed run; the parent reaps the process group anyway.
sys.stdout.flush()
sys.stderr.flush()
os._exit(status)
