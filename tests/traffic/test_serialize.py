"""The one JSON shape of a stored record, for the Traffic page's API and its socket."""
from __future__ import annotations

import json
from datetime import datetime

import pytest

from tests.factories import EngineFactory, RelayRecordFactory
from traffic.relay.record import ToolCall
from traffic.rows import to_row
from traffic.serialize import record_json

pytestmark = pytest.mark.django_db


def test_it_gives_the_figures_and_the_arrival_but_never_the_bodies():
    engine = EngineFactory(machine__capture_bodies=True)
    record = RelayRecordFactory.build(
        request_body={"messages": [{"role": "user", "content": "private"}]}, response_text="private answer",
        tool_calls=[ToolCall("read", "a.py")], draft_tokens=40, accepted_tokens=31,
    )
    row = to_row(engine.machine_id, record, engine.pk)
    row.save()

    sent = json.loads(json.dumps(record_json(row)))
    assert "private" not in json.dumps(sent)
    assert (sent["id"], sent["machine"], sent["engine"]) == (row.pk, engine.machine_id, engine.pk)
    assert sent["captured"] is True
    assert datetime.fromisoformat(sent["arrived"]).timestamp() == record.arrived
    for figure in ("ttft_s", "e2e_s", "decode_tps_client", "decode_tps_engine", "prompt_tokens",
                   "new_prompt_tokens", "output_tokens", "draft_tokens", "accepted_tokens"):
        assert sent[figure] == getattr(record, figure), figure
    assert sent["tool_calls"] == [{"name": "read", "path": "a.py"}]
