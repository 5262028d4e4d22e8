"""Private Redis and Postgres servers for the service-fault tests, to stop and start at will.

The machine's shared Redis and Postgres serve other test runs; these run on free ports, with
their data in a temporary folder, and are stopped by the test that started them.
"""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.real_engine import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")
START_TIMEOUT_S = 30.0




def missing_tools() -> str:
    """Why these servers cannot run here, or "" when they can."""
    if not shutil.which("redis-server"):
        return "needs redis-server"
    if not (PG_BIN / "initdb").exists() or not shutil.which("runuser"):
        return f"needs Postgres 15 ({PG_BIN}) and runuser"
    return ""


def wait_for_port(port: int, timeout_s: float = START_TIMEOUT_S) -> None:
    """Return once something accepts connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on port {port} after {timeout_s} s") from None
            time.sleep(0.05)


class PrivateRedis:
    """redis-server on a free port, without persistence: a restart forgets everything, as
    a restarted cache-only Redis does (queued messages, channel groups)."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start redis-server; return once it accepts connections."""
        command = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--daemonize", "no",
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.port)

    def stop(self) -> None:
        """Shut down as a service manager's restart does (SIGTERM), SIGKILL if it hangs."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self) -> float:
        """Stop and start again on the same port; returns the seconds it was down."""
        t0 = time.monotonic()
        self.stop()
        self.start()
        return time.monotonic() - t0


class PrivatePostgres:
    """A Postgres 15 cluster of its own (trust auth, user postgres) on a free port.

    We run as root, and Postgres refuses to: the cluster belongs to the postgres user, in a
    folder of its own under /tmp (pytest's temporary folders are closed to other users).
    """

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sparkdash-postgres-"))
        self.data = self.root / "data"
        self.port = free_port()

    def url(self, database: str) -> str:
        """The DATABASE_URL of `database` on this cluster."""
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        """initdb: a new, empty cluster (trust auth, superuser postgres)."""
        shutil.chown(self.root, "postgres", "postgres")
        self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        """pg_ctl start on this cluster's port; returns once it accepts connections."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg_ctl("start", "-o", options, "-l", str(self.root / "server.log"))

    def restart(self) -> float:
        """Stop (fast: every connection is dropped) and start again; returns the seconds it was down."""
        t0 = time.monotonic()
        self._pg_ctl("stop", "-m", "fast")
        self.start()
        return time.monotonic() - t0

    def stop(self) -> None:
        """Stop the server and remove its files."""
        if (self.data / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, name: str, template: str = "template1") -> None:
        """createdb NAME, as a copy of `template` (a migrated database copies in a blink)."""
        where = ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]
        self._as_postgres("createdb", *where, "-T", template, name)

    def log(self) -> str:
        """The server's log so far."""
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _pg_ctl(self, action: str, *args: str) -> None:
        wait = ["-w", "-t", str(int(START_TIMEOUT_S))]
        self._as_postgres("pg_ctl", action, "-D", str(self.data), *wait, *args)

    def _as_postgres(self, program: str, *args: str) -> None:
        command = ["runuser", "-u", "postgres", "--", str(PG_BIN / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root)
        if done.returncode:
            raise RuntimeError(f"{program} {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
