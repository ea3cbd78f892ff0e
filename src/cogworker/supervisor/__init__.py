"""The supervisor behind ``cogworker run --processes N``: one parent, N worker children.

The parent runs no jobs. It starts each child as a fresh interpreter running the same
``cogworker run`` command line, respawns children that crash (with back-off), relays
signals, replaces children that outgrow their memory or job budget, and puts a dead
child's jobs back at once (the OS vouches for the death). ``docs/explanation/
architecture.md`` ("The supervisor") names each module and its one job. Nothing here is
imported by the package's root: importing :mod:`.lineage` stays cheap.
"""
