"""A private PostgreSQL cluster for tests: initdb into a fresh folder, listening only on a
unix socket inside that folder (no TCP port at all), stopped and deleted afterwards.

PostgreSQL refuses to run as root. When the tests run as root (CI does), the cluster runs as
the ``postgres`` system user that Debian's package creates, or as ``nobody`` where there is
none: the folder is made in ``/tmp`` (which every user can traverse) and handed to that user.
The binaries are found on PATH or in Debian's ``/usr/lib/postgresql/<version>/bin``;
``scripts/install-postgres`` installs them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "cogworker"  # the cluster's superuser, trusted on its private socket
_TOOLS = ("initdb", "pg_ctl", "postgres")


def find_bindir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres (newest Debian version first)."""
    candidates: list[Path] = []
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                         key=lambda path: _version(path.parent.name), reverse=True)
    for folder in candidates:
        if all(os.access(folder / tool, os.X_OK) for tool in _TOOLS):
            return folder
    return None


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: None (this user) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root, and neither a 'postgres' nor a 'nobody' user exists "
                       "to run PostgreSQL as (it refuses root): create one of them")


@dataclass
class PostgresServer:
    bindir: Path
    base: Path  # holds the data folder, the socket and the log

    @property
    def socket_dir(self) -> str:
        return str(self.base)

    @property
    def log(self) -> Path:
        return self.base / "postgres.log"

    def dsn(self, database: str = "postgres") -> str:
        return f"host={self.socket_dir} user={SUPERUSER} dbname={database}"

    def stop(self) -> None:
        if (self.base / "data" / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.base / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.base, ignore_errors=True)

    def _run(self, tool: str, *args: str) -> None:
        user = _server_user()
        result = subprocess.run(
            [str(self.bindir / tool), *args], cwd=self.base, capture_output=True, text=True,
            user=user.pw_uid if user else None, group=user.pw_gid if user else None,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8",
                 "HOME": str(self.base)},
            timeout=120, check=False,
        )
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} {' '.join(args)} failed ({result.returncode}):\n"
                               f"{result.stdout}{result.stderr}\n{log}")


def start_postgres(bindir: Path) -> PostgresServer:
    """initdb and start a cluster; the caller stops it (``server.stop()``)."""
    base = Path(tempfile.mkdtemp(prefix="cw-pg-"))  # short: socket paths are length-limited
    user = _server_user()
    if user is not None:
        os.chown(base, user.pw_uid, user.pw_gid)
    server = PostgresServer(bindir, base)
    try:
        server._run("initdb", "-D", str(base / "data"), "-U", SUPERUSER, "--auth=trust",
                    "-E", "UTF8", "--no-sync", "--no-instructions")
        options = (f"-c listen_addresses='' -c unix_socket_directories='{base}' "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        server._run("pg_ctl", "-D", str(base / "data"), "-o", options, "-l", str(server.log),
                    "-w", "-t", "60", "start")
    except BaseException:
        server.stop()
        raise
    return server
