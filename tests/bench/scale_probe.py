"""The scale benchmark's measuring process: `python -m tests.bench.scale_probe SIZE DATABASE_URL`.

Runs in its own process because Django is set up on the bench database (created, migrated and
filled here when it does not hold SIZE yet). Times each page server side through the test
client (median of REPEATS after a warm-up), counts its queries, and prints one JSON object.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

REPEATS = 9
MAX_POINTS = 2000


def main(size_name: str, url: str) -> None:
    """Prepare the database, then measure; the result is the last line of stdout."""
    os.environ.update({
        "DATABASE_URL": url, "DEBUG": "False", "SECRET_KEY": "bench-only", "SECURE_SSL_REDIRECT": "False",
        "SECURE_COOKIES": "False", "SECURE_HSTS_SECONDS": "0", "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "sparkdash.settings",
    })
    os.environ.pop("REDIS_URL", None)
    os.environ["SPARKDASH_WORKER"] = "inprocess"
    from tests.bench.scale_db import ensure_database

    fresh = ensure_database(url, size_name)
    import django

    django.setup()
    started = time.perf_counter()
    result = {"size": size_name, "generated": _prepare(size_name, fresh)}
    _say(f"{size_name}: database ready in {time.perf_counter() - started:.1f} s")
    result |= measure()
    _say(f"{size_name}: measured in {time.perf_counter() - started:.1f} s")
    print(json.dumps(result))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _prepare(size_name: str, fresh: bool) -> dict[str, float] | None:
    from django.core.management import call_command

    from tests.bench.scale_data import SIZES, generate, holds

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    _say(f"{size_name}: migrated in {time.perf_counter() - started:.1f} s")
    size = SIZES[size_name]
    if holds(size):
        return None
    if not fresh:
        raise RuntimeError(f"{size_name}: the database holds other data; drop it and run again")
    return generate(size)


def measure() -> dict[str, Any]:
    """Every page's median time (ms) and query count, and the per-page-size query counts."""
    from django.test import Client

    from runs.models import Run

    client = Client()
    client.force_login(_user())
    big = Run.objects.filter(progress_total__gte=10_000, status="succeeded").order_by("pk").first()
    newest = Run.objects.filter(status="succeeded").order_by("-created")
    twenty = list(newest.values_list("pk", flat=True)[:20])
    pages = {
        "home": "/",
        "run list": "/runs/",
        "run list, last page": "/runs/?page=100000",
        "run page (10,000 samples)": f"/runs/{big.pk}/",
        "run samples, downsampled": f"/api/runs/{big.pk}/samples?after=-1&max_points={MAX_POINTS}",
        "compare 20 runs": _compare(twenty),
    }
    timings = {name: _time_get(client, path) for name, path in pages.items()}
    timings["run samples, all pages"] = _time(lambda: _all_samples(client, big.pk), repeats=3)
    return {
        "timings": timings,
        "points": len(client.get(pages["run samples, downsampled"]).json()["samples"]),
        "list_queries": {n: _list_queries(client, n) for n in (25, 100)},
        "compare_queries": {n: _count(lambda n=n: client.get(_compare(twenty[:n]))) for n in (5, 20)},
        "backfill": _time(lambda: _backfill(big.pk), repeats=3),
    }


def _compare(runs: list[int]) -> str:
    return "/compare/?runs=" + ",".join(map(str, runs))


def _user() -> Any:
    from django.contrib.auth import get_user_model

    from engines import models

    user, _ = get_user_model().objects.get_or_create(username="bench")
    team_model = getattr(models, "Team", None)
    if team_model is None:
        user.is_superuser = user.is_staff = True
        user.save()
    else:
        team_model.default().members.add(user)
    return user


def _time_get(client: Any, path: str) -> dict[str, float]:
    def get() -> None:
        response = client.get(path)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path}: {response.status_code}")

    return _time(get) | {"queries": _count(get)}


def _time(call: Callable[[], Any], repeats: int = REPEATS) -> dict[str, float]:
    call()
    call()
    ms, cpu = [], []
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        call()
        ms.append(1000 * (time.perf_counter() - started))
        cpu.append(1000 * (time.process_time() - cpu_started))
    return {"median_ms": statistics.median(ms), "max_ms": max(ms), "cpu_ms": statistics.median(cpu)}


def _count(call: Callable[[], Any]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def _list_queries(client: Any, rows: int) -> dict[str, int]:
    """The run list's query count with `rows` runs per page (and that the page did show them)."""
    with mock.patch("runs.views.run_page.PAGE_SIZE", rows):
        html = client.get("/runs/").content.decode()
        queries = _count(lambda: client.get("/runs/"))
    return {"queries": queries, "rows": html.count("<tr>") - 1}


def _all_samples(client: Any, run_id: int) -> int:
    """What the page of an ended run fetches without downsampling: pages until one is empty."""
    after, total = -1, 0
    while samples := client.get(f"/api/runs/{run_id}/samples", {"after": after}).json()["samples"]:
        after, total = samples[-1]["seq"], total + len(samples)
    return total


def _backfill(run_id: int) -> int:
    """A socket's backfill of every stored sample of the run (RunConsumer, in-memory layer)."""
    from asgiref.sync import async_to_sync

    return async_to_sync(_socket_backfill)(run_id)


async def _socket_backfill(run_id: int) -> int:
    from channels.testing import WebsocketCommunicator

    from runs.live.consumers import RunConsumer

    communicator = WebsocketCommunicator(RunConsumer.as_asgi(), f"/ws/runs/{run_id}/")
    communicator.scope["user"] = await _async_user()
    communicator.scope["url_route"] = {"args": (), "kwargs": {"run_id": run_id}}
    connected, _ = await communicator.connect()
    if not connected:
        raise RuntimeError("the run socket refused the connection")
    total, last = 0, -1
    await communicator.receive_json_from(timeout=10)  # the run itself
    target = await _last_seq(run_id)
    while last < target:
        message = await communicator.receive_json_from(timeout=10)
        if message["type"] == "samples":
            total, last = total + len(message["samples"]), message["samples"][-1]["seq"]
    await communicator.disconnect()
    return total


async def _async_user() -> Any:
    from django.contrib.auth import get_user_model

    return await get_user_model().objects.aget(username="bench")


async def _last_seq(run_id: int) -> int:
    from django.db.models import Max

    from runs.models import Sample

    return (await Sample.objects.filter(run_id=run_id).aaggregate(m=Max("seq")))["m"]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
