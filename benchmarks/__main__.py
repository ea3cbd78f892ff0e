"""``python -m benchmarks``: run the benchmark and print the table."""

from __future__ import annotations

import sys

from benchmarks.cli import main

sys.exit(main())
