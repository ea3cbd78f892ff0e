"""Benchmark cogworker against RQ, Dramatiq, Celery, arq and huey on one private Redis.

Run ``python -m benchmarks --help`` (or ``benchmarks/run``); see ``benchmarks/README.md``.
"""
