"""The child of ``benchmarks/cold_start.py``: one system's first enqueue in a fresh process.

``python benchmarks/first_enqueue.py MODULE JOB`` (run as a script, not with ``-m``, so that
no ``runpy`` machinery is imported before the clock starts) times, with ``perf_counter``:

* importing the system's job module (the library, its app object and jobs), and
* making its client and enqueueing one job (``perform_async``, ``enqueue``, ``send`` ...),
* then a second enqueue, for comparison,

and prints the three durations in seconds as JSON, with the CPU time this process spent on
the first enqueue (``process_time``: on a loaded machine the wall time also counts the
time other processes held the cores). Before the clock starts it has imported
only what the interpreter itself had loaded, and ``importlib`` and ``json`` afterwards.
"""

from __future__ import annotations

import importlib
import os
import sys
import time


def main() -> None:
    # Run as a script, the folder of this file comes first on sys.path; the jobs' modules
    # are found through PYTHONPATH (the repository root), and nothing here may shadow a
    # library's own top-level imports.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    module_name, job = sys.argv[1], sys.argv[2]
    started = time.perf_counter()
    module = importlib.import_module(module_name)
    imported = time.perf_counter()
    cpu_before = time.process_time()
    client = module.make_client(job)
    client.push_each([0.0])
    first = time.perf_counter()
    cpu_first = time.process_time() - cpu_before
    client.push_each([1.0])
    second = time.perf_counter()
    client.close()
    import json

    print(json.dumps({"import": imported - started, "first_enqueue": first - imported,
                      "second_enqueue": second - first, "first_enqueue_cpu": cpu_first}))


if __name__ == "__main__":
    main()
