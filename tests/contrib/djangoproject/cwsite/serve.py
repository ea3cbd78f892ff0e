"""``python -m cwsite.serve``: the test project over real HTTP on 127.0.0.1, a free port.

Prints ``listening on PORT`` once it accepts connections; stops on SIGTERM.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

import django
from werkzeug.serving import make_server


def main() -> None:
    django.setup()
    from django.core.wsgi import get_wsgi_application

    server = make_server("127.0.0.1", 0, get_wsgi_application(), threaded=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"listening on {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
