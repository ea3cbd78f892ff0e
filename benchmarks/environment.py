"""The private Redis every system shares, the optional delay proxy, and admin commands.

The harness's own commands (FLUSHALL, CONFIG RESETSTAT, INFO) go straight to Redis; the
systems under test connect through the proxy when there is one.
"""

from __future__ import annotations

import os
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import psutil
import redis

from benchmarks.counter import COUNTER_ENV
from benchmarks.systems import REDIS_URL_ENV, ROUND_TRIP_KEY
from cogworker.redis.server import RedisServer

PROXY_START_TIMEOUT = 10.0


class BenchEnvironment:
    """Starts Redis (no persistence) and, with ``delay_ms``, the delay proxy; stops both."""

    def __init__(self, work_dir: Path, delay_ms: float, python: str = sys.executable) -> None:
        self.server = RedisServer(work_dir / "redis", appendonly=False, extra_args=("--save", ""))
        self.delay_ms = delay_ms
        self.python = python
        self.proxy: subprocess.Popen[str] | None = None
        self.proxy_port: int | None = None
        self._admin: redis.Redis | None = None
        self._info_calls = 0  # INFO cpu calls of ours since the last reset_stats()

    def __enter__(self) -> BenchEnvironment:
        self.server.start()
        try:
            if self.delay_ms > 0:
                self._start_proxy()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.proxy is not None:
            self.proxy.terminate()
            try:
                self.proxy.wait(10)
            except subprocess.TimeoutExpired:
                self.proxy.kill()
                self.proxy.wait()
            self.proxy = None
        self.server.stop()

    # addresses ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """What the systems under test connect to (through the proxy when there is one)."""
        if self.proxy_port is not None:
            return f"redis://127.0.0.1:{self.proxy_port}/0"
        return self.server.url

    @property
    def admin(self) -> redis.Redis:
        if self._admin is None:
            self._admin = redis.Redis.from_url(self.server.url)
        return self._admin

    # admin ----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Empty the private server between runs (it is ours; nobody else uses it)."""
        self.admin.flushall()

    def reset_stats(self) -> None:
        self.admin.config_resetstat()
        self._info_calls = 0

    def command_calls(self) -> dict[str, int]:
        """Calls per command since the last reset, without the reset itself."""
        stats = self._info("commandstats")
        calls = {name.removeprefix("cmdstat_"): int(entry["calls"])
                 for name, entry in stats.items()}
        reset = "config|resetstat" if "config|resetstat" in calls else "config"  # Redis 7, 6
        calls[reset] = calls.get(reset, 0) - 1  # our CONFIG RESETSTAT
        calls["info"] = calls.get("info", 0) - self._info_calls
        return {name: count for name, count in calls.items() if count > 0}

    def cpu_seconds(self) -> float:
        """Redis's CPU time so far (``INFO cpu``: used_cpu_user + used_cpu_sys)."""
        info = self._info("cpu")
        self._info_calls += 1
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def round_trips(self) -> int:
        """How many times the round-trip job has incremented its key since the last flush."""
        value = cast("bytes | None", self.admin.get(ROUND_TRIP_KEY))
        return int(value) if value is not None else 0

    def incr_cpu_us(self, count: int = 2000) -> float:
        """CPU µs one ``INCR`` costs a redis-py client here: the round-trip job's own work."""
        client = redis.Redis.from_url(self.url)
        try:
            client.incr("bench-incr-cost")
            started = time.process_time()
            for _ in range(count):
                client.incr("bench-incr-cost")
            used = time.process_time() - started
            client.delete("bench-incr-cost")
        finally:
            client.close()
        return used / count * 1e6

    def redis_version(self) -> str:
        return str(self._info("server")["redis_version"])

    def _info(self, section: str) -> dict[str, Any]:
        info: Any = self.admin.info(section)  # typed loosely before redis-py 8
        return dict(info)

    def round_trip_ms(self, pings: int = 200) -> float:
        """Median PING round trip as the systems see it (through the proxy if any)."""
        client = redis.Redis.from_url(self.url)
        try:
            client.ping()
            samples = []
            for _ in range(pings):
                started = time.perf_counter()
                client.ping()
                samples.append(time.perf_counter() - started)
        finally:
            client.close()
        return statistics.median(samples) * 1000

    def proxy_cpu_seconds(self) -> float | None:
        """CPU time the delay proxy has used so far (None without a proxy)."""
        if self.proxy is None:
            return None
        times = psutil.Process(self.proxy.pid).cpu_times()
        return float(times.user + times.system)

    # proxy ----------------------------------------------------------------------------------
    def _start_proxy(self) -> None:
        port = self.server.port
        if port is None:
            raise RuntimeError(f"{self.server!r} has no TCP port for the delay proxy")
        self.proxy = subprocess.Popen(
            [self.python, "-m", "benchmarks.delay_proxy", "--upstream-port", str(port),
             "--delay-ms", str(self.delay_ms)],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONPATH": _python_path()},
        )
        assert self.proxy.stdout is not None
        ready, _, _ = select.select([self.proxy.stdout], [], [], PROXY_START_TIMEOUT)
        line = self.proxy.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            raise RuntimeError(
                f"the delay proxy did not report its port within {PROXY_START_TIMEOUT:g}s "
                f"(got {line!r}); run `python -m benchmarks.delay_proxy --help` to check it"
            )
        self.proxy_port = int(line)


def repository_root() -> Path:
    return Path(__file__).resolve().parent.parent


def _python_path() -> str:
    existing = os.environ.get("PYTHONPATH")
    root = str(repository_root())
    return f"{root}{os.pathsep}{existing}" if existing else root


def child_environment(redis_url: str, counter_file: Path) -> dict[str, str]:
    """The environment of workers and clients: no COGWORKER_* leaking in from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COGWORKER_")}
    env.update({"PYTHONPATH": _python_path(), REDIS_URL_ENV: redis_url,
                COUNTER_ENV: str(counter_file), "PYTHONUNBUFFERED": "1"})
    return env
