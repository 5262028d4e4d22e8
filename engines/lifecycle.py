"""Starting, watching and stopping a local engine process (llama-server, ollama serve, the simulator).

Plain asyncio with no Django import. The engine runs in its own process group with stdout and
stderr merged; every output line goes to an optional log file and callback, and the last few are
kept for error messages. A run that uses the engine goes through `run_while_alive`, so an engine
that dies mid-run fails the run with its exit status instead of a hang or a bare connection error.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TypeVar

import httpx

from engines.clients import lost_socket
from engines.clients.base import EngineError

__all__ = [
    "EngineDied",
    "EngineStartError",
    "ManagedEngine",
    "describe_returncode",
    "kill_orphan",
    "missing_model",
    "port_is_free",
    "run_while_alive",
    "wait_port_free",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

TAIL_LINES = 20  # output lines kept for error messages
POLL_S = 0.1  # /health and port polling interval
EXIT_POLL_S = 0.05  # how often a waiter looks for the process's exit
START_GRACE_S = 0.3  # start() waits this long for a program that exits at once
DEATH_GRACE_S = 0.5  # a failed job waits this long to learn whether the engine died under it
_CHUNK = 65536
_MAX_LINE = 65536  # output with no newline for this long (load progress dots) is taken as a line


class EngineStartError(EngineError):
    """The engine could not be started, exited at once, or never became healthy."""


class EngineDied(EngineError):
    """The engine process exited while a run was using it."""


def describe_returncode(returncode: int) -> str:
    """A return code in words: "exit code 1", or "killed by SIGKILL" for a negative one."""
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"


class ManagedEngine:
    """One engine process: start it, wait for /health, watch it, stop it and its children."""

    def __init__(
        self,
        argv: Sequence[str | os.PathLike[str]],
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        log_path: Path | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        """:param argv: the program and its arguments.
        :param env: the whole environment of the process, as subprocess takes it; None inherits ours.
        :param log_path: a file every output line is appended to (parent folders are created).
        :param on_line: called with every output line (no newline), in the event loop; keep it quick.
        """
        if not argv:
            raise ValueError("argv is empty")
        self.argv = [os.fspath(arg) for arg in argv]
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.log_path = log_path
        self.on_line = on_line
        self.process: asyncio.subprocess.Process | None = None
        self.started_at: float | None = None  # time.monotonic() just before the spawn
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._reader: asyncio.Task[None] | None = None
        self._log: IO[str] | None = None
        self._stop_lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    async def __aenter__(self) -> ManagedEngine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self, grace_s: float = START_GRACE_S) -> None:
        """Start the process and its output reader.

        :param grace_s: how long to watch for a program that exits at once (bad flags, missing model).
        Raises EngineStartError naming the program when it cannot be run, or with its exit status
        and last output lines when it exits within `grace_s`.
        """
        if self.process is not None:
            raise RuntimeError("this engine was already started")
        self._log = _open_log(self.log_path)
        self.started_at = time.monotonic()
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            self._close_log()
            raise EngineStartError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from exc
        assert self.process.stdout is not None
        self._reader = asyncio.create_task(self._read_output(self.process.stdout))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wait_exit(), grace_s)
        if self.process.returncode is not None:
            await self._finish_reader()
            raise EngineStartError(
                f"{self.argv[0]} exited at once ({self.exit_status()}); {self._tail_text()}"
            )

    async def wait_healthy(self, url: str, timeout_s: float) -> float:
        """Poll GET {url}/health until it answers 200; return seconds from the spawn to healthy.

        llama-server answers 503 while it loads the model; refused connections count as not yet.
        Raises EngineStartError on timeout, or as soon as the process exits, with its last lines.
        """
        if self.process is None or self.started_at is None:
            raise RuntimeError("start() the engine first")
        health = url.rstrip("/") + "/health"
        deadline = time.monotonic() + timeout_s
        # A local engine: no proxy from the environment may stand in between.
        async with httpx.AsyncClient(trust_env=False) as http:
            while True:
                if self.process.returncode is not None:
                    await self._finish_reader()
                    raise EngineStartError(
                        f"engine exited ({self.exit_status()}) before it became healthy; "
                        f"{self._tail_text()}"
                    )
                remaining = deadline - time.monotonic()
                ok = await _answers_200(http, health, max(0.05, min(1.0, remaining)))
                # Checked again: a 200 from whatever else holds the port is no proof of our engine.
                if ok and self.process.returncode is None:
                    return time.monotonic() - self.started_at
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise EngineStartError(
                        f"engine did not become healthy within {timeout_s:g} s; {self._tail_text()}"
                    )
                await asyncio.sleep(min(POLL_S, remaining))

    def exit_status(self) -> str | None:
        """How the process ended ("exit code 1", "killed by SIGKILL"); None while running or unstarted."""
        if self.process is None or self.process.returncode is None:
            return None
        return describe_returncode(self.process.returncode)

    async def wait_exit(self) -> str:
        """Wait for the process to exit and return its exit status."""
        if self.process is None:
            raise RuntimeError("start() the engine first")
        # Not Process.wait(): that also waits for the output pipe to close, which a child the
        # engine started (Ollama's llama-server) can hold open long after the engine is gone.
        # The return code is set at the exit itself, so it is polled.
        while self.process.returncode is None:  # noqa: ASYNC110
            await asyncio.sleep(EXIT_POLL_S)
        return describe_returncode(self.process.returncode)

    async def stop(self, timeout_s: float = 10) -> str:
        """SIGTERM the process group, SIGKILL it after `timeout_s`; return the exit status.

        Safe to call again, concurrently, or after the engine died: it then only returns the status.
        """
        if self.process is None:
            return "not started"
        pid = self.process.pid
        async with self._stop_lock:
            if self.process.returncode is None:
                _signal_group(pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(self.wait_exit(), timeout_s)
                except TimeoutError:
                    logger.warning("engine pid %d ignored SIGTERM for %g s; killing it", pid, timeout_s)
                    _signal_group(pid, signal.SIGKILL)
                    try:
                        await asyncio.wait_for(self.wait_exit(), 10)
                    except TimeoutError:
                        raise EngineError(f"engine pid {pid} survived SIGKILL for 10 s") from None
            # Whatever in the group outlived the engine (a child it started) must not keep the port.
            _signal_group(pid, signal.SIGKILL)
            await self._finish_reader()
        status = self.exit_status()
        assert status is not None
        return status

    async def _read_output(self, stream: asyncio.StreamReader) -> None:
        """Split the merged output into lines; read in chunks so no line length can stall it."""
        pending = b""
        try:
            while chunk := await stream.read(_CHUNK):
                *lines, pending = (pending + chunk).split(b"\n")
                if len(pending) > _MAX_LINE:
                    lines.append(pending)
                    pending = b""
                for raw in lines:
                    self._take_line(raw)
            if pending:
                self._take_line(pending)
        finally:
            self._close_log()

    def _take_line(self, raw: bytes) -> None:
        line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
        self.tail.append(line)
        if self._log is not None:
            try:
                self._log.write(line + "\n")
                self._log.flush()
            except OSError:
                # Reading must go on (a full pipe would stall the engine); only the file stops.
                logger.exception("cannot write engine log %s; no more lines go there", self.log_path)
                self._close_log()
        if self.on_line is not None:
            try:
                self.on_line(line)
            except Exception:
                logger.exception("on_line failed on engine log line %r", line[:200])

    async def _finish_reader(self, timeout_s: float = 1.0) -> None:
        """Let the reader take the last lines after the exit (bounded: a child may hold the pipe)."""
        if self._reader is not None:
            await asyncio.wait({self._reader}, timeout=timeout_s)

    def _tail_text(self) -> str:
        if not self.tail:
            return "it wrote no output"
        return "last log lines:\n" + "\n".join(self.tail)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _open_log(path: Path | None) -> IO[str] | None:
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("a", encoding="utf-8")


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_orphan(pid: int, argv: Sequence[str]) -> bool:
    """SIGKILL the process group of an engine whose starter died; True if it was killed.

    Only when /proc shows that `pid` still runs `argv`, so a pid reused by another program is
    never hit (without /proc nothing is killed).
    """
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if cmdline.split(b"\0")[:-1] != [os.fsencode(arg) for arg in argv]:
        return False
    _signal_group(pid, signal.SIGKILL)
    return True


async def _answers_200(http: httpx.AsyncClient, url: str, timeout_s: float) -> bool:
    try:
        with lost_socket.as_connect_error():  # an engine dying as it starts can reset the poll's connection
            response = await http.get(url, timeout=timeout_s)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def missing_model(model: str) -> str | None:
    """Why a managed engine cannot load `model` here, or None: a path (a GGUF file, a Hugging Face
    folder) that does not exist on this machine. Names (an Ollama tag, a hub id) are the engine's
    to resolve."""
    if not model.startswith(("/", "./", "../", "~")):
        return None
    path = Path(model).expanduser()
    if path.exists():
        return None
    return f"model {model}: no such file or folder on this machine (a managed engine loads it from here)"


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind `host:port` now (a bind test, not a connect test)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Engines set SO_REUSEADDR too, so connections left in TIME_WAIT don't count as busy;
        # a listening socket still does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


async def wait_port_free(host: str, port: int, timeout_s: float) -> bool:
    """Poll `port_is_free` until it is true (True) or `timeout_s` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not port_is_free(host, port):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL_S)
    return True


async def run_while_alive(engine: ManagedEngine, job: Awaitable[T]) -> T:
    """Run `job` against `engine`; if the engine exits first, cancel the job and raise EngineDied.

    A job that fails because its stream was cut is reported as EngineDied too when the engine
    turns out to have exited (within DEATH_GRACE_S), so the run's reason names the exit status.
    """
    work = asyncio.ensure_future(job)
    death = asyncio.ensure_future(engine.wait_exit())
    try:
        await asyncio.wait({work, death}, return_when=asyncio.FIRST_COMPLETED)
        if work.done() and (work.cancelled() or work.exception() is None):
            return work.result()
        if work.done():
            await asyncio.wait({death}, timeout=DEATH_GRACE_S)
            if not death.done():
                return work.result()  # the job's own error, the engine being alive
        cause = work.exception() if work.done() and not work.cancelled() else None
        raise EngineDied(f"engine exited ({death.result()}) during the run") from cause
    finally:
        work.cancel()
        death.cancel()
        # Let the job close its connection before the caller goes on (e.g. to stop the engine).
        await asyncio.wait({work, death})
