"""The batched writer: batches, a put that never waits on the database, outages, the bound, close."""
from __future__ import annotations

import time

import pytest

from tests.factories import EngineFactory, MachineFactory, RelayRecordFactory
from tests.traffic.conftest import database_down, postgres_only, table_locked, wait_for
from traffic.models import TrafficRecord
from traffic.relay.record import ToolCall
from traffic.rows import to_row

pytestmark = pytest.mark.django_db(transaction=True)


def stored_keys(machine) -> list[str]:
    return list(TrafficRecord.objects.filter(machine=machine).values_list("key", flat=True))


def test_it_stores_many_records_in_a_few_batches(writers, listener):
    machine = MachineFactory()
    watching = listener(machine.pk)
    writer = writers(machine, batch=200, interval_s=0.5)
    records = RelayRecordFactory.build_batch(450)
    for record in records:
        writer.put(record)
    assert writer.flush(30)

    sizes = [len(message["records"]) for message in watching.messages()]
    assert sorted(stored_keys(machine)) == sorted(r.key for r in records)
    assert sum(sizes) == 450 and max(sizes) <= 200
    assert len(sizes) <= 4  # one insert per batch, not per record
    assert writer.counters().stored == 450


def test_it_stores_a_lone_record_within_the_interval(writers):
    machine = MachineFactory()
    writer = writers(machine, batch=200, interval_s=0.2)
    writer.put(RelayRecordFactory.build())
    wait_for(lambda: writer.counters().stored == 1, timeout=10)
    assert len(stored_keys(machine)) == 1


def test_it_returns_from_put_at_once_while_the_table_is_locked(writers):
    machine = MachineFactory()
    writer = writers(machine, batch=10, interval_s=0.05)
    records = RelayRecordFactory.build_batch(500)
    with table_locked(TrafficRecord._meta.db_table):
        slowest = 0.0
        for record in records:
            started = time.perf_counter()
            writer.put(record)
            slowest = max(slowest, time.perf_counter() - started)
        time.sleep(0.5)  # the writer's first insert is waiting on the lock by now
        waiting = writer.counters()
    assert slowest < 0.05, f"a put took {slowest * 1000:.1f} ms"
    assert waiting.stored == 0 and waiting.buffered == 500
    assert writer.flush(60)
    assert len(stored_keys(machine)) == 500


@postgres_only
def test_it_loses_no_record_across_a_database_outage_and_stores_each_once(writers):
    machine = MachineFactory()
    writer = writers(machine, batch=20, interval_s=0.05)
    before, during = RelayRecordFactory.build_batch(100), RelayRecordFactory.build_batch(300)
    for record in before:
        writer.put(record)
    assert writer.flush(30)
    with database_down():
        started = time.perf_counter()
        for record in during:
            writer.put(record)
        assert time.perf_counter() - started < 0.5  # 300 puts while every connection is refused
        wait_for(lambda: writer.counters().last_error != "")
        time.sleep(1)  # a few retries against a database that still refuses
        down = writer.counters()
    assert "Error" in down.last_error, down
    assert down.stored < 400 and down.buffered > 0

    assert writer.flush(60), writer.counters()
    keys = stored_keys(machine)
    assert sorted(keys) == sorted(r.key for r in before + during)  # all there, none twice
    after = writer.counters()
    assert (after.accepted, after.stored, after.dropped, after.last_error) == (400, 400, 0, "")


def test_it_stores_once_a_record_an_earlier_try_already_stored(writers):
    machine = MachineFactory()
    records = RelayRecordFactory.build_batch(5)
    to_row(machine.pk, records[2], None).save()  # a try that committed, though its answer was lost
    writer = writers(machine, batch=5, interval_s=0.05)
    for record in records:
        writer.put(record)
    assert writer.flush(30)
    assert sorted(stored_keys(machine)) == sorted(r.key for r in records)
    assert writer.counters().stored == 5


def test_it_drops_new_records_past_the_bound_and_counts_them(writers):
    machine = MachineFactory()
    writer = writers(machine, bound=5, batch=100, interval_s=60)
    records = RelayRecordFactory.build_batch(8)
    for record in records:
        writer.put(record)
    full = writer.counters()
    assert (full.accepted, full.buffered, full.dropped) == (5, 5, 3)
    assert writer.close(30)
    assert sorted(stored_keys(machine)) == sorted(r.key for r in records[:5])  # the accepted ones


def test_it_stores_the_rest_when_closed_and_refuses_records_after(writers):
    machine = MachineFactory()
    writer = writers(machine, batch=100, interval_s=60)
    records = RelayRecordFactory.build_batch(7)
    for record in records:
        writer.put(record)
    assert writer.close(30)
    writer.put(RelayRecordFactory.build())
    assert sorted(stored_keys(machine)) == sorted(r.key for r in records)
    assert (writer.counters().stored, writer.counters().dropped) == (7, 1)


def test_it_tells_the_machines_page_what_it_stored(writers, listener):
    machine = MachineFactory()
    engine = EngineFactory(machine=machine)
    watching, elsewhere = listener(machine.pk), listener(MachineFactory().pk)
    writer = writers(machine, interval_s=0.05, engine_id=lambda: engine.pk)
    record = RelayRecordFactory.build(
        request_body={"messages": [{"role": "user", "content": "secret"}]}, response_text="answer",
        tool_calls=[ToolCall("read", "src/app.py")],
    )
    writer.put(record)
    assert writer.flush(30)

    (message,) = watching.messages()
    row = TrafficRecord.objects.get(key=record.key)
    (sent,) = message["records"]
    assert (sent["id"], sent["engine"], sent["key"]) == (row.pk, engine.pk, record.key)
    assert sent["tool_calls"] == [{"name": "read", "path": "src/app.py"}]
    assert "request_body" not in sent and "response_text" not in sent
    assert row.request_body == record.request_body  # stored, only not broadcast
    assert elsewhere.messages(timeout=0.2) == []


def test_it_leaves_out_a_record_the_database_refuses_and_stores_the_rest(writers):
    machine = MachineFactory()
    engine = EngineFactory(machine=machine)
    gone = engine.pk + 1000  # an engine deleted since the relay resolved it
    ids = iter([engine.pk, gone, engine.pk])
    writer = writers(machine, batch=3, interval_s=0.05, engine_id=lambda: next(ids))
    records = RelayRecordFactory.build_batch(3)
    for record in records:
        writer.put(record)
    assert writer.flush(30)
    assert sorted(stored_keys(machine)) == sorted([records[0].key, records[2].key])
    counters = writer.counters()
    assert (counters.stored, counters.dropped) == (2, 1) and "IntegrityError" in counters.last_error
