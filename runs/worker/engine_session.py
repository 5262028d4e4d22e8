"""The engine side of one run: start a managed engine (one per machine), keep and parse its log.

A managed engine is started from its config's launch recipe, checked for health, timed, and
stopped after the run (its port confirmed free). An external engine is only probed; its log
is tailed from the file or command configured on the engine. Known log lines become
warnings (a silent prompt-cache drop) and acceptance figures (the only ones Ollama gives).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone

from engines import kinds
from engines.clients import EngineClient, EngineError, client_for
from engines.counters_text import startup_phases
from engines.lifecycle import (
    EngineStartError,
    ManagedEngine,
    kill_orphan,
    missing_model,
    port_is_free,
    run_while_alive,
    wait_port_free,
)
from engines.logparse import parse_line, read_new_lines
from engines.models import EngineConfig, EngineSession
from engines.recipes import LaunchSettings, Recipe, render, settings_from_config, simulator
from engines.recipes.checks import launch_refusal
from engines.recipes.flags import checked
from engines.recipes.model_dirs import resolve_model
from engines.simulator.cache import MIB_PER_TOKEN
from measure.words import gettext_noop
from runs.core.worded import warning
from runs.models import Run

T = TypeVar("T")
LOG_TAIL_LINES = 5000


class MachineBusy(EngineError):
    """Another engine already runs on this machine; one engine per machine is a rule."""


class RunEngine:
    """Async context manager around one run's engine; `await it.run(job)` runs the job."""

    def __init__(self, run: Run, start: bool = True) -> None:
        self.start = start  # False: the job launches the engine itself (see at_lookahead)
        self.run_obj = run
        self.engine = run.config.engine
        self.kind = kinds.get(self.engine.kind)
        # The simulator writes llama-server's log lines whatever kind it stands in for.
        self.log_parser = parse_line if self.engine.simulator else self.kind.log_parser
        self.lines: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.acceptance: list[dict[str, Any]] = []
        # lookahead length -> the acceptance lines logged while the sweep ran at it
        self.acceptance_by_length: dict[str, list[dict[str, Any]]] = {}
        self._log_position: int | None = None
        self._log_lock = asyncio.Lock()  # the tail's poll and a sweep's read share the position
        self.warnings: list[dict[str, Any]] = []
        self.process: ManagedEngine | None = None
        self.session: EngineSession | None = None
        self.tail_task: asyncio.Task | None = None
        self.startup_s: float | None = None
        self.startups: list[dict[str, Any]] = []

    async def __aenter__(self) -> RunEngine:
        if self.engine.managed:
            if self.start:
                await self._start_managed(settings_from_config(self.run_obj.config))
        else:
            self.tail_task = asyncio.create_task(self._tail_external())
        return self

    async def __aexit__(self, *exc: object) -> None:
        # A job cancelled mid-release (the run cancelled as it ended) must still release the engine.
        release = asyncio.ensure_future(self._release())
        try:
            await asyncio.shield(release)
        except asyncio.CancelledError:
            await release
            raise

    async def _release(self) -> None:
        if self.tail_task:
            self.tail_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.tail_task
        if self.process:
            await self._stop_managed()
        await Run.objects.filter(pk=self.run_obj.pk).aupdate(
            engine_log="\n".join(self.lines), warnings=self.warnings
        )

    @property
    def answering(self) -> bool:
        """Whether an engine should answer now: an external one, or a managed one we started."""
        return not self.engine.managed or self.process is not None

    async def run(self, job: Awaitable[T]) -> T:
        """Run the job; for a managed engine, fail it as soon as the engine process dies."""
        if self.process:
            return await run_while_alive(self.process, job)
        return await job

    def on_line(self, line: str) -> None:
        """Keep a log line and turn the known ones into acceptance figures and warnings."""
        self.lines.append(line)
        event = self.log_parser(line) if self.log_parser else None
        if event is None:
            return
        if event.event == "acceptance":
            self.acceptance.append(
                {"rate": event.rate, "accepted": event.accepted, "generated": event.generated,
                 "mean_len": event.mean_len}
            )
        elif event.event == "cache-discard":
            self.warnings.append(warning("cache-discard", _CACHE_DISCARD) | {"line": line})

    @contextlib.asynccontextmanager
    async def at_lookahead(self, length: int) -> AsyncIterator[tuple[EngineClient, str]]:
        """The engine set to `length` draft tokens: relaunched (managed) or a model alias."""
        config = self.run_obj.config
        client = client_for(self.engine.kind, self.engine.base_url, self.engine.api_key)
        try:
            if self.engine.managed:
                launch = settings_from_config(config).with_(lookahead=length)
                if not length:  # lookahead 0: plain decoding, no drafter loaded
                    launch = launch.with_(speculative_method="", draft_model="")
                await self._start_managed(launch)
                yield client, config.model
                await self._stop_managed()
                self.process = None
            elif self.kind.lookahead_by == "alias":
                first = len(self.acceptance)
                yield client, await ollama_alias(client, config, length)
                await self.read_log_now()
                self.acceptance_by_length[str(length)] = self.acceptance[first:]
            else:
                raise EngineError(LOOKAHEAD_NEEDS_RELAUNCH)
        finally:
            await client.aclose()

    def _recipe(self, launch: LaunchSettings) -> Recipe:
        try:
            return simulator_recipe(launch, self.run_obj.config) if self.engine.simulator else render(launch)
        except ValueError as exc:  # a row written behind the form's back; the message names the setting
            reason = exc.args[0] if exc.args else exc
            raise EngineStartError(f"the config's launch settings cannot run: {reason}") from None

    async def _start_managed(self, launch: LaunchSettings) -> None:
        launch = checked_launch(launch)
        missing = None if self.engine.simulator else missing_model(launch.model)
        if missing:  # before anything starts: the engine would take its whole start-up to say so
            raise EngineStartError(missing)
        recipe = self._recipe(launch)
        self.session = await _open_session(self.run_obj, recipe.argv)
        parts = urlsplit(self.engine.base_url)
        if not port_is_free(parts.hostname or "127.0.0.1", parts.port or 80):
            await self._close_session("port busy")
            raise MachineBusy(f"port {parts.port} is already taken: stop what listens there first")
        log_path = Path(settings.VAR_DIR) / "engine-logs" / f"run-{self.run_obj.pk}.log"
        env = os.environ | recipe.env
        self.process = ManagedEngine(
            recipe.argv, env=env, cwd=engine_cwd(), log_path=log_path, on_line=self.on_line
        )
        try:
            await self.process.start()
            self.startup_s = await self.process.wait_healthy(
                self.engine.base_url, settings.SPARKDASH_ENGINE_START_TIMEOUT_S
            )
            self.startups.append({"lookahead": launch.lookahead, "startup_s": self.startup_s,
                                  "engine_phases": await self._startup_phases()})  # fmt: skip
        except BaseException:
            await self._stop_managed()
            raise
        await EngineSession.objects.filter(pk=self.session.pk).aupdate(
            pid=self.process.pid, startup_s=self.startup_s
        )

    async def _startup_phases(self) -> dict[str, float] | None:
        """The engine's own start-up time by phase, where its /metrics tells (None: it does not)."""
        if not self.kind.startup_gauge or self.engine.simulator:
            return None
        try:
            async with client_for(self.engine.kind, self.engine.base_url, self.engine.api_key) as client:
                text = await client.counters_text()
            return startup_phases(text, self.kind.startup_gauge) if text else None
        except EngineError:
            return None

    async def _stop_managed(self) -> None:
        assert self.process is not None and self.session is not None
        status = await self.process.stop()
        parts = urlsplit(self.engine.base_url)
        freed = await wait_port_free(parts.hostname or "127.0.0.1", parts.port or 80, 10.0)
        if not freed:
            busy = gettext_noop("port %(port)s still busy after stop")
            self.warnings.append(warning("port", busy, port=parts.port))
        await self._close_session(status)

    async def _close_session(self, status: str) -> None:
        assert self.session is not None
        stopped = EngineSession.objects.filter(pk=self.session.pk)
        await stopped.aupdate(stopped=timezone.now(), exit_status=status)

    async def read_log_now(self) -> None:
        """Read what the external engine's log file got since the last look (tail's next poll)."""
        async with self._log_lock:
            if not self.engine.log_path or self._log_position is None:
                return
            lines, self._log_position = await asyncio.to_thread(
                read_new_lines, Path(self.engine.log_path), self._log_position
            )
        for line in lines:
            self.on_line(line)

    async def _tail_external(self) -> None:
        if self.engine.log_path:
            # Followed from its current end, like tail -f (survives rotation and a late file).
            _, self._log_position = await asyncio.to_thread(read_new_lines, Path(self.engine.log_path), None)
            while True:
                await asyncio.sleep(0.2)
                await self.read_log_now()
        elif self.engine.log_command:
            await _tail_command(self.engine.log_command, self.on_line)


def checked_launch(launch: LaunchSettings) -> LaunchSettings:
    """The settings a managed engine starts with, checked again on this machine right before the
    start (a row written behind the form's back included): extra flags in the allowlist, models
    inside this machine's model directories (names resolved there). EngineStartError otherwise."""
    refusal = launch_refusal(launch)
    if refusal is not None:
        raise EngineStartError(f"launch refused: {refusal}")
    if launch.simulator:  # the simulator never opens its model
        return launch
    return launch.with_(model=resolve_model(launch.model), draft_model=resolve_model(launch.draft_model))


def engine_cwd() -> Path:
    """An empty folder the engine starts in, so a name it resolves itself finds no file of ours."""
    folder = Path(settings.VAR_DIR) / "engine-cwd"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


LOOKAHEAD_NEEDS_RELAUNCH = (
    "a lookahead sweep sets the length by relaunching the engine (llama-server ignores per-request "
    "lengths): make this engine managed, or use Ollama, where SparkDash creates a Modelfile alias"
)


# The share of the bandwidth ceiling a simulated box decodes at: the seed's 27B Q8_0 measured
# 7.9 tok/s against 273 GB/s / 28.6 GB = 9.5 (83 %).
SIM_EFFICIENCY = 0.83
# Prompt tokens a simulated box computes a second, once its prompt cache is modelled.
SIM_PREFILL_TPS = 6000


def simulator_recipe(launch: LaunchSettings, config: EngineConfig) -> Recipe:
    """The SparkDash simulator started like an engine, sized like the config's model.

    Its flags follow from the config and machine (simulator_flags); the config's extra flags
    (the simulator's allowlist only) come last, so a test can still pin a speed or an acceptance.
    """
    argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "simengine"]
    argv += ["--host", launch.host, "--port", str(launch.port)]
    argv += simulator_flags(config, launch.lookahead)
    return Recipe(kind="simulator", argv=argv + checked(simulator.ALLOWED_FLAGS, config.extra_flags or ""))


def simulator_flags(config: EngineConfig, lookahead: int) -> list[str]:
    """simengine flags that make the simulator behave like this config's model on its machine.

    Decode speed: SIM_EFFICIENCY x the roofline ceiling (machine bandwidth / the config's
    bytes_per_token_gb) when both are known. The prompt cache is modelled when cache_ram_mib is
    set (-1: no limit, 0: off), at the simulator's 0.2 MiB per token, as llama-server's --cache-ram.
    """
    flags = ["--lookahead", str(lookahead)]
    bandwidth, size = config.engine.machine.bandwidth_gbps, config.bytes_per_token_gb
    if bandwidth and size:
        flags += ["--bandwidth-gbps", f"{bandwidth:g}", "--model-gb", f"{size:g}"]
        flags += ["--efficiency", f"{SIM_EFFICIENCY:g}"]
    if config.cache_ram_mib is not None:
        flags += ["--prefill-tps", f"{SIM_PREFILL_TPS:g}"]
        if config.cache_ram_mib >= 0:
            flags += ["--cache-tokens", str(round(config.cache_ram_mib / MIB_PER_TOKEN))]
    return flags


async def ollama_alias(client: EngineClient, config: EngineConfig, length: int) -> str:
    """Create (idempotently) an Ollama alias of the config's model with draft_num_predict=length."""
    recipe = render(settings_from_config(config).with_(lookahead=length))
    for call in recipe.api_calls:
        await client.post_json(call["path"], call["json"] | {"stream": False})
    return recipe.api_calls[0]["json"]["model"] if recipe.api_calls else config.model


_CACHE_DISCARD = gettext_noop(
    "the engine dropped a prompt from its RAM cache (exceeds cache size limit): long conversations "
    "will recompute their whole prompt; raise --cache-ram / LLAMA_ARG_CACHE_RAM"
)


async def _open_session(run: Run, argv: list[str]) -> EngineSession:
    """Record the engine start; the partial unique index refuses a second engine on the machine."""
    try:
        return await EngineSession.objects.acreate(
            machine_id=run.machine_id, engine=run.config.engine, run_id=run.pk, command=argv
        )
    except IntegrityError:
        other = await sync_to_async(_running_session)(run.machine_id)
        raise MachineBusy(f"machine {run.machine.name} already runs an engine: {other}") from None


def release_engines_of(run_id: int, port_wait_s: float = 5.0) -> None:
    """Close the engine sessions a lost run left open, killing its engine if it still runs.

    The worker that started the engine died without stopping it (the engine runs in its own
    session, so it outlives the worker); the recorded command is checked against the process,
    so a pid the system has since reused is never killed.
    """
    for session in EngineSession.objects.filter(run_id=run_id, stopped__isnull=True).select_related("engine"):
        status = "left behind by a lost run"
        if session.pid and kill_orphan(session.pid, session.command):
            status = f"killed: left behind by a lost run (pid {session.pid})"
            parts = urlsplit(session.engine.base_url)
            deadline = time.monotonic() + port_wait_s
            while not port_is_free(parts.hostname or "127.0.0.1", parts.port or 80):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        EngineSession.objects.filter(pk=session.pk, stopped__isnull=True).update(
            stopped=timezone.now(), exit_status=status
        )


def _running_session(machine_id: int) -> str:
    session = EngineSession.objects.filter(machine_id=machine_id, stopped__isnull=True).first()
    if session is None:
        return "(it stopped meanwhile)"
    return f"{session.engine.name} (pid {session.pid}, since {session.started:%Y-%m-%d %H:%M:%S})"


async def _tail_command(command: str, on_line: Callable[[str], None]) -> None:
    proc = await asyncio.create_subprocess_exec(
        *shlex.split(command), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        assert proc.stdout is not None
        while raw := await proc.stdout.readline():
            on_line(raw.decode("utf-8", "replace").rstrip("\n"))
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
