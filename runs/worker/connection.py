"""A connection check on the machine whose worker runs it: the URL is checked against the machine
again here, then asked what it is (engines.clients.probe); the API key is forgotten afterwards."""
from __future__ import annotations

import asyncio
import logging

from django.utils import timezone

from engines.clients.probe import probe
from engines.models import Engine
from runs.models import ConnectionCheck

log = logging.getLogger(__name__)


def run_check(check_id: int) -> None:
    """Probe the check's URL and store what answered; a check already run is left as it is."""
    try:
        check = ConnectionCheck.objects.select_related("machine").filter(pk=check_id, finished=None).first()
        if check is None:
            return
        refusal = Engine(machine=check.machine, base_url=check.base_url).url_refusal()
        if refusal:
            result = {"reachable": False, "error": f"not fetched: {refusal}"}
        else:
            result = asyncio.run(probe(check.kind, check.base_url, check.api_key))
        ConnectionCheck.objects.filter(pk=check_id).update(result=result, api_key="", finished=timezone.now())
    except Exception as exc:  # the page waits for an answer: give it one
        log.exception("connection check %s failed", check_id)
        ConnectionCheck.objects.filter(pk=check_id).update(
            result={"reachable": False, "error": f"internal error: {exc!r}"}, api_key="",
            finished=timezone.now())
