"""``python -m benchmarks [options]``: today's table; ``python -m benchmarks matrix``: issue 23."""

from __future__ import annotations

import sys

if len(sys.argv) > 1 and sys.argv[1] == "matrix":
    from benchmarks.matrix import main as matrix_main

    sys.exit(matrix_main(sys.argv[2:]))

from benchmarks.cli import main

sys.exit(main())
