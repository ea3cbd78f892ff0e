"""Tests of examples/fastapi and examples/flask (not named ``examples``, which would
shadow the repository's examples/ package for tests/web)."""
