"""``python -m benchmarks.round_trip``: where one synchronous enqueue spends its time.

Against a private Redis (optionally behind the delay proxy), in this one process:

* a bare socket loop of ``LPUSH`` with the reply awaited asleep in ``recv``, and awaited by
  polling the socket without sleeping: the round trip itself, without any library;
* ``perform_async`` with ``push_busy_wait = 0`` (sleep at once) and with the default.

For each: microseconds per push, wall clock and this process's CPU time. Every figure is
the median of ``--runs`` loops of ``--n`` pushes, the two ways alternating.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.environment import BenchEnvironment
from cogworker import App
from cogworker.core.settings import DEFAULT_PUSH_BUSY_WAIT

Loop = Callable[[int], None]

_BODY = (b'{"class":"noop","args":[1],"queue":"default","jid":"0123456789abcdef01234567",'
         b'"retry":true,"created_at":1.0,"enqueued_at":1.0}')
_FRAME = b"*3\r\n$5\r\nLPUSH\r\n$4\r\nbare\r\n$%d\r\n%s\r\n" % (len(_BODY), _BODY)


def _bare_loop(host: str, port: int, *, poll: bool) -> tuple[Loop, Callable[[], None]]:
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(not poll)

    def loop(count: int) -> None:
        for _ in range(count):
            sock.sendall(_FRAME)
            while True:
                try:
                    sock.recv(4096)  # ":<length>\r\n" fits in one read
                    break
                except BlockingIOError:
                    pass

    return loop, sock.close


def _enqueue_loop(url: str, busy_wait: float) -> tuple[Loop, Callable[[], None]]:
    app = App(redis_url=url, push_busy_wait=busy_wait)

    @app.job
    def noop(argument: int) -> None: ...

    noop.perform_async(0)  # push.lua registers the queue; later pushes use the push line

    def loop(count: int) -> None:
        for index in range(count):
            noop.perform_async(index)

    return loop, app.close


def _measure(loop: Loop, count: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    loop(count)
    return ((time.perf_counter() - wall) / count * 1e6,
            (time.process_time() - cpu) / count * 1e6)


def _compare(name: str, ways: dict[str, tuple[Loop, Callable[[], None]]], count: int,
             runs: int) -> list[str]:
    figures: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
    for _ in range(runs):
        for way, (loop, _) in ways.items():
            figures[way].append(_measure(loop, count))
    for _, close in ways.values():
        close()
    rows = []
    for way, samples in figures.items():
        wall = statistics.median(sample[0] for sample in samples)
        cpu = statistics.median(sample[1] for sample in samples)
        rows.append(f"| {name} | {way} | {wall:.1f} | {cpu:.1f} |")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.round_trip")
    parser.add_argument("--n", type=int, default=20_000, help="pushes per loop")
    parser.add_argument("--runs", type=int, default=3, help="loops per way (median shown)")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="delay each way through the benchmark's proxy")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work, BenchEnvironment(Path(work),
                                                                  options.delay_ms) as env:
        host, port = "127.0.0.1", env.proxy_port or env.server.port
        assert port is not None
        rows = _compare("bare LPUSH loop", {
            "reply awaited asleep in recv": _bare_loop(host, port, poll=False),
            "reply awaited by polling": _bare_loop(host, port, poll=True),
        }, options.n, options.runs)
        rows += _compare("perform_async", {
            "push_busy_wait = 0": _enqueue_loop(env.url, 0.0),
            f"push_busy_wait = {DEFAULT_PUSH_BUSY_WAIT} (default)":
                _enqueue_loop(env.url, DEFAULT_PUSH_BUSY_WAIT),
        }, options.n, options.runs)
        round_trip = env.round_trip_ms()
    print(f"N = {options.n:,} pushes, median of {options.runs} loops; delay "
          f"{options.delay_ms} ms each way; PING round trip {round_trip:.3f} ms\n")
    print("| loop | how | µs per push (wall) | µs per push (CPU of this process) |")
    print("|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
