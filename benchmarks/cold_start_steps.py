"""Where cogworker's first enqueue goes, step by step, for an instruction counter.

``python benchmarks/cold_start_steps.py STEP`` imports cogworker's benchmark job module
and makes its client, as ``first_enqueue.py`` does, then runs the first enqueue only up to
``STEP`` and exits:

* ``import``: nothing more (the base every other step is compared with);
* ``discover``: the plugin catalog (the entry-point scan, or its cache);
* ``plugin-modules``: and the import of the active plugins' modules;
* ``hooks``: ``app.hooks`` (the above, registration with pluggy, ``cogworker_configure``);
* ``broker``: and ``app.broker`` (the Redis client, no connection yet);
* ``push``: one ``perform_async``, the whole first enqueue.

Wall and CPU times of a short step are noise on a shared machine; the instructions it
runs are not. Count them under valgrind, each step against ``import``::

    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        python benchmarks/cold_start_steps.py push     # minus the same for "import"

with ``PYTHONPATH`` set to the repository root and ``BENCH_REDIS_URL`` (and
``BENCH_COUNTER_FILE``) as ``first_enqueue.py`` has them; run each step once untimed first,
so that bytecode and the plugin scan's cache are written. Set ``PYTHONHASHSEED=0`` too: with
a random seed each run's dictionaries differ and the counts move by a million or two.
"""

from __future__ import annotations

import importlib
import os
import sys

STEPS = ("import", "discover", "plugin-modules", "hooks", "broker", "push")


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in STEPS:
        sys.exit(f"usage: cold_start_steps.py {{{','.join(STEPS)}}}")
    step = STEPS.index(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))  # as in first_enqueue.py: no shadowing
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    module = importlib.import_module("benchmarks.systems.cogworker_app")
    client = module.make_client("noop")
    app = module.app
    if step == STEPS.index("discover") or step == STEPS.index("plugin-modules"):
        from cogworker.core import plugins

        catalog = plugins.discover()
        if step == STEPS.index("plugin-modules"):
            settings = app.settings
            for name in plugins.resolve_active(catalog, settings.fetch, settings.plugins,
                                               settings):
                catalog.entry(name).load()
    elif step in (STEPS.index("hooks"), STEPS.index("broker")):
        app.hooks  # noqa: B018 -- the step under measure
        if step == STEPS.index("broker"):
            app.broker  # noqa: B018
    elif step == STEPS.index("push"):
        client.push_each([0.0])


if __name__ == "__main__":
    main()
