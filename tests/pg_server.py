"""A private PostgreSQL server for the tests: Debian's binaries, a cluster in a temporary folder.

`PostgresServer.start(folder)` makes a cluster there with `initdb` (trust authentication, no
fsync: the tests kill processes, never the machine) and starts it with `pg_ctl` on a free
loopback port, its socket in the folder too; `stop()` stops it. Running as root, the cluster
belongs to the `postgres` user and every command runs as that user (PostgreSQL refuses root).
`new_database()` gives each test a database of its own, so that no table, row or advisory
lock of one test meets another's.

The binaries are found on PATH, else in `/usr/lib/postgresql/<version>/bin` (Debian's
`postgresql` package, which `.ci/run` installs when missing).
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
from pathlib import Path

__all__ = ["PostgresServer", "find_binary"]


def find_binary(name: str) -> str:
    """The path of the PostgreSQL program `name`; `RuntimeError` naming the package if none."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return candidate
    raise RuntimeError(f"PostgreSQL's {name!r} is not installed: apt-get install postgresql "
                       "(.ci/run does this)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """One running PostgreSQL cluster on 127.0.0.1 (see the module)."""

    def __init__(self, folder: Path, port: int, as_user: list[str]) -> None:
        self.folder = folder
        self.port = port
        self._as_user = as_user
        self._names = itertools.count(1)

    @classmethod
    def start(cls, folder: Path) -> PostgresServer:
        """Make a cluster in `folder` (created; must not hold one) and start it."""
        folder.mkdir(parents=True, exist_ok=True)
        as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL will not run as root
            as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(folder, "postgres")
            for parent in folder.parents:  # the postgres user must reach the folder
                if parent == Path("/"):
                    break
                os.chmod(parent, os.stat(parent).st_mode | 0o011)
        data = folder / "data"
        subprocess.run([*as_user, find_binary("initdb"), "-D", str(data), "-A", "trust",
                        "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"],
                       check=True, capture_output=True, text=True)
        server = cls(folder, _free_port(), as_user)
        server._pg_ctl("start")
        return server

    def dsn(self, database: str = "postgres") -> str:
        """A libpq URL for `database` on this server (user `postgres`, no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new empty database's DSN."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def restart(self) -> None:
        """Stop the server at once (as a crash would) and start it again on the same port."""
        self._pg_ctl("stop", "-m", "immediate")
        self._pg_ctl("start")

    def stop(self) -> None:
        """Stop the server (fast shutdown: open connections are closed)."""
        self._pg_ctl("stop", "-m", "fast")

    def _pg_ctl(self, *action: str) -> None:
        """`pg_ctl <action>` on this cluster, with its settings, waiting for it to finish."""
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} "
                   f"-c unix_socket_directories={self.folder} -c fsync=off "
                   "-c full_page_writes=off -c max_connections=200")
        subprocess.run([*self._as_user, find_binary("pg_ctl"), "-D", str(self.folder / "data"),
                        "-o", options, "-l", str(self.folder / "server.log"), "-w", "-t", "60",
                        *action], check=True, capture_output=True, text=True)
