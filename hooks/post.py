#!/usr/bin/env python3
"""Global post hook (example for --hooks-dir): pass the result through.

stdin:  {..., "result": {...}}
Reads (and discards) its input so the writer never sees a broken pipe,
prints nothing (= keep the result as it is), and exits 0.
"""

import sys

while sys.stdin.buffer.read(65536):
    pass
sys.exit(0)
