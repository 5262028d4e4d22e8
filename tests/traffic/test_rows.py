"""A relayed record becomes its row: aware arrival time, tool calls as JSON, long text cut to fit."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.factories import EngineFactory, RelayRecordFactory
from traffic.models import TrafficRecord
from traffic.relay.record import ToolCall
from traffic.rows import to_row

pytestmark = pytest.mark.django_db


def test_it_stores_the_arrival_as_an_aware_time_and_the_tool_calls_as_json():
    engine = EngineFactory()
    record = RelayRecordFactory.build(
        arrived=1_780_000_123.25, tool_calls=[ToolCall("read", "src/a.py"), ToolCall("run_tests")]
    )
    to_row(engine.machine_id, record, engine.pk).save()

    row = TrafficRecord.objects.get(key=record.key)
    assert row.arrived == datetime.fromtimestamp(1_780_000_123.25, tz=UTC)
    assert row.tool_calls == [{"name": "read", "path": "src/a.py"}, {"name": "run_tests", "path": ""}]
    assert row.engine_id == engine.pk
    assert (row.ttft_s, row.new_prompt_tokens) == (record.ttft_s, record.new_prompt_tokens)


def test_it_cuts_text_longer_than_its_column_instead_of_losing_the_record():
    engine = EngineFactory()
    record = RelayRecordFactory.build(client="agent/" + "x" * 1000, model="m" * 500)
    to_row(engine.machine_id, record, None).save()
    row = TrafficRecord.objects.get(key=record.key)
    assert row.client == record.client[:300] and row.model == record.model[:300]
