"""A TCP proxy that delays every chunk by a fixed time in each direction (asyncio).

``python -m benchmarks.delay_proxy --upstream-port PORT --delay-ms 1`` listens on a free port
of 127.0.0.1, prints it on one line, and forwards each connection to the upstream port.
Every chunk read is written to the other side ``delay`` seconds after it arrived, in order,
without holding back the chunks behind it: pipelined traffic keeps flowing, as it does
through a network with that much latency (and as toxiproxy's ``latency`` toxic does).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

LOCALHOST = "127.0.0.1"
CHUNK = 65536


async def _forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   delay: float) -> None:
    loop = asyncio.get_running_loop()
    pending: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read_side() -> None:
        while True:
            try:
                data = await reader.read(CHUNK)
            except ConnectionError:
                data = b""
            pending.put_nowait((loop.time() + delay, data))
            if not data:
                return

    reading = asyncio.create_task(read_side())
    try:
        while True:
            due, data = await pending.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                return
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        return
    finally:
        reading.cancel()
        writer.close()


async def _serve(upstream_port: int, delay: float) -> None:
    async def handle(client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                LOCALHOST, upstream_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            _forward(client_reader, upstream_writer, delay),
            _forward(upstream_reader, client_writer, delay),
            return_exceptions=True,
        )

    server = await asyncio.start_server(handle, LOCALHOST, 0)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.delay_proxy")
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, required=True)
    options = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(options.upstream_port, options.delay_ms / 1000))


if __name__ == "__main__":
    main()
