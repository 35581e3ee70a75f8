"""A real PostgreSQL server for the tests, made and started in a temporary directory.

Debian's ``postgresql`` package has the server binaries (``initdb``, ``pg_ctl``) in
``/usr/lib/postgresql/VERSION/bin``; ``make deps`` installs it.  Without them the
fixture FAILS with how to install them: CI must never pass by skipping these tests.

The server listens on a unix socket in the temporary directory only (no TCP port, so
nothing clashes with another server or test run), with durability off (fsync and
friends: a test database need not survive a power cut) and password authentication,
so that a wrong password is a real authentication failure.  PostgreSQL refuses to
run as root: as root the cluster belongs to the ``postgres`` user (made by the
Debian package) and its commands run through ``runuser``.  Stopped afterwards.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

INSTALL_HINT = (
    "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): "
    "run 'make deps' (apt-get install postgresql)"
)
USER = "tkbench"
PASSWORD = "s3cret-pw"  # of the test cluster's superuser


def server_bin() -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if not found:
        raise RuntimeError(INSTALL_HINT)
    return Path(found[-1]).parent


@dataclass
class Server:
    dir: Path  # the socket's directory, the cluster, its log
    bin: Path
    owner: str | None  # the system user the cluster runs as (None: this process's)
    seconds: float = 0.0  # how long initdb and start took

    def url(self, db: str = "postgres", password: str = PASSWORD, user: str = USER) -> str:
        auth = f"{user}:{quote(password, safe='')}" if password else user
        return f"postgresql://{auth}@/{db}?host={quote(str(self.dir), safe='')}"

    def sql(self, statement: str, db: str = "postgres") -> list[tuple[object, ...]]:
        """Run one statement as the superuser (autocommit: CREATE DATABASE needs it)."""
        import psycopg

        with psycopg.connect(self.url(db), autocommit=True) as con:
            cur = con.execute(statement)
            return cur.fetchall() if cur.description else []

    def old_history(self, url: str, version: int) -> str:
        """Make the database of ``url`` a history as tkbench wrote it at ``version``;
        returns the database's name."""
        from tests._helpers import old_history_steps
        from tkbench.history import schema

        name = url.split("/")[3].split("?")[0]
        self.sql(f"CREATE TABLE {schema.VERSION_TABLE} (version INTEGER NOT NULL)", name)
        self.sql(f"INSERT INTO {schema.VERSION_TABLE} VALUES ({version})", name)
        for sql in old_history_steps(version, "DOUBLE PRECISION", "BIGINT"):
            self.sql(sql, name)
        return name

    def new_database(self, name: str) -> str:
        """A new empty database; its URL."""
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / argv[0]), *argv[1:]]
        if self.owner is not None:
            cmd = ["runuser", "-u", self.owner, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def _owner() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError(
            "PostgreSQL cannot run as root and there is no 'postgres' user to run it as: "
            "run 'make deps' (apt-get install postgresql makes it)"
        ) from None
    return "postgres"


def running_server() -> Iterator[Server]:
    """Make a cluster in a new temporary directory, start it, yield it; stop it and
    remove the directory afterwards (also when the tests fail)."""
    binaries, owner = server_bin(), _owner()
    began = time.monotonic()
    # a short path: a unix socket's path is limited to about 100 bytes
    root = Path(tempfile.mkdtemp(prefix="tkpg-", dir="/tmp"))
    server = Server(root, binaries, owner)
    try:
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if owner is not None:
            os.chown(root, pwd.getpwnam(owner).pw_uid, -1)
            os.chown(pwfile, pwd.getpwnam(owner).pw_uid, -1)
        done = server.run(
            "initdb", "-D", str(root / "data"), "-U", USER, f"--pwfile={pwfile}",
            "-A", "scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8",
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()}")
        settings = (
            f"-k {root} -c listen_addresses= -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=20"
        )
        done = server.run(
            "pg_ctl", "-D", str(root / "data"), "-l", str(root / "log"), "-w", "-s",
            "-o", settings, "start",
        )  # fmt: skip
        if done.returncode != 0:
            log = (root / "log").read_text() if (root / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()} {log[-500:]}")
        server.seconds = time.monotonic() - began
        yield server
    finally:
        if (root / "data" / "postmaster.pid").exists():
            server.run("pg_ctl", "-D", str(root / "data"), "-m", "immediate", "-w", "-s", "stop")
        shutil.rmtree(root, ignore_errors=True)
