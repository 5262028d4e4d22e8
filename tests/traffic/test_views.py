"""The Traffic pages: figures and relay state, records.json, conversations, bodies only for the
machine's team, and replaying a conversation as a run of its captured requests."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from engines.models import Machine
from runs.models import Run
from teams.models import AuditEvent, Role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, EngineFactory, TrafficRecordFactory
from tests.teams.people import person
from traffic.models import RelayState, TrafficRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_dispatch(monkeypatch):
    # The worker side is not under test here: keep queued runs queued.
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)


def body(n: int) -> dict:
    return {"model": "qwen3", "messages": [{"role": "user", "content": f"step {n} question"}], "stream": True}


def conversation(machine: Machine, key: str = "ab" * 16, steps: int = 3, captured: bool = True) -> list:
    now = timezone.now()
    return [
        TrafficRecordFactory(
            machine=machine, conversation=key, turn=1 + 2 * n, arrived=now - timedelta(minutes=steps - n),
            request_body=body(n) if captured else None, response_text=f"answer {n}" if captured else "",
        )
        for n in range(steps)
    ]


def test_it_says_how_to_start_a_relay_when_none_runs(alpha):
    html = logged_in(alpha.owner).get(reverse("traffic:page", args=[alpha.machine.pk])).content.decode()
    assert "no relay running: start one with make relay MACHINE=alpha-box TEAM=alpha-team" in html


def test_it_shows_the_relays_addresses_counters_and_heartbeat_age(alpha):
    now = timezone.now()
    RelayState.objects.create(
        machine=alpha.machine, started=now - timedelta(hours=1), heartbeat=now - timedelta(seconds=4),
        addresses={"ollama": "http://0.0.0.0:11435", "openai": "http://0.0.0.0:8081"},
        upstream="http://127.0.0.1:8080", accepted=1234, stored=1230, buffered=4, dropped=0,
    )
    html = logged_in(alpha.owner).get(reverse("traffic:page", args=[alpha.machine.pk])).content.decode()
    where = "ollama at http://0.0.0.0:11435, openai at http://0.0.0.0:8081"
    assert f"relay: {where}, to http://127.0.0.1:8080" in html
    assert "last heartbeat 4 s ago" in html
    assert "accepted 1,234 · stored 1,230 · buffered 4 · dropped 0" in html
    RelayState.objects.update(heartbeat=now - timedelta(minutes=5))
    html = logged_in(alpha.owner).get(reverse("traffic:page", args=[alpha.machine.pk])).content.decode()
    assert "it has probably stopped" in html


def test_it_shows_the_windows_figures_and_latest_requests(alpha):
    TrafficRecordFactory(machine=alpha.machine, ttft_s=0.25, prompt_tokens=1000, new_prompt_tokens=100,
                         generation_s=3, e2e_s=4, path="/api/chat", front="ollama")
    TrafficRecordFactory(machine=alpha.machine, status=502, error="engine unreachable", arrived=timezone.now()
                         - timedelta(hours=2))
    client = logged_in(alpha.owner)
    html = client.get(reverse("traffic:page", args=[alpha.machine.pk])).content.decode()
    # The last hour: alpha's world record and the first one above; the error is 2 h old.
    assert "2 requests" in html
    assert "0 of 2 (0.0 %)" in html
    assert "p50 0.33 s" in html and "(n=2)" in html and "only 2 requests" in html
    assert "10.0 % (300 of 3,000 prompt tokens, n=2)" in html
    assert "75.0 % of the time" in html
    assert "<code>ollama /api/chat</code>" in html
    day = client.get(reverse("traffic:page", args=[alpha.machine.pk]) + "?window=24h").content.decode()
    assert "1 of 3 (33.3 %)" in day
    assert "engine unreachable" in day


def test_it_lists_warnings_on_the_traffic_page(alpha):
    records = conversation(alpha.machine)
    TrafficRecord.objects.filter(pk=records[2].pk).update(new_prompt_tokens=1900)
    html = logged_in(alpha.owner).get(reverse("traffic:page", args=[alpha.machine.pk])).content.decode()
    assert 'data-warning="prefix-cache-discard"' in html
    assert "conversation abababab, step 3" in html


def test_it_answers_the_records_after_an_id_without_bodies(alpha):
    first = alpha.traffic
    second = TrafficRecordFactory(machine=alpha.machine, request_body=body(1), response_text="alpha-answer 2")
    client = logged_in(alpha.owner)
    url = reverse("traffic:records", args=[alpha.machine.pk])
    answer = client.get(url, {"since": first.pk}).json()
    assert [r["id"] for r in answer["records"]] == [second.pk]
    assert answer["last_id"] == second.pk
    assert answer["records"][0]["captured"] is True
    assert answer["stats"]["requests"] == 2
    assert answer["texts"]["requests"] == "2 requests"
    text = client.get(url, {"since": 0}).content.decode()
    assert "alpha-secret" not in text and "alpha-answer" not in text and "request_body" not in text
    quiet = client.get(url, {"since": second.pk}).json()
    assert (quiet["records"], quiet["last_id"], quiet["stats"]) == ([], second.pk, None)
    assert client.get(url, {"since": second.pk, "stats": "1"}).json()["stats"]["requests"] == 2


def test_it_refuses_a_bad_since_or_window_with_a_clear_error(alpha):
    url = reverse("traffic:records", args=[alpha.machine.pk])
    client = logged_in(alpha.owner)
    response = client.get(url, {"since": "last"})
    assert response.status_code == 400
    assert response.json() == {"error": "since must be a record id (a whole number)"}
    response = client.get(url, {"window": "7d"})
    assert (response.status_code, response.json()) == (400, {"error": "window must be one of 15m, 1h, 24h"})


def test_it_groups_conversations_with_their_figures(alpha):
    conversation(alpha.machine)
    TrafficRecordFactory(machine=alpha.machine)  # no conversation key
    url = reverse("traffic:conversations", args=[alpha.machine.pk])
    html = logged_in(alpha.owner).get(url).content.decode()
    assert 'data-conversation="abababababababababababababababab"' in html
    assert 'data-conversation="alphaconv"' in html
    assert "<td>3</td>" in html and "<td>6000</td>" in html  # steps, prompt tokens
    assert "10.0 %" in html  # 600 of 6,000 prompt tokens new
    assert "1 request without a conversation key" in html


def test_it_shows_a_conversations_steps_and_bodies_to_the_team(alpha):
    conversation(alpha.machine)
    url = reverse("traffic:conversation", args=[alpha.machine.pk, "ab" * 16])
    html = logged_in(alpha.teammate).get(url).content.decode()
    assert html.count('class="step"') == 3
    assert html.index("step 0 question") < html.index("step 1 question") < html.index("step 2 question")
    assert "answer 2" in html
    assert "Replay this conversation" in html and 'id="replay-form"' in html


@pytest.mark.parametrize("name", ["traffic:conversation", "traffic:replay"])
def test_it_never_shows_another_teams_bodies(name, alpha, bravo):
    url = reverse(name, args=[alpha.machine.pk, alpha.traffic.conversation])
    client = logged_in(bravo.owner)
    if name == "traffic:conversation":
        response = client.get(url)
    else:
        response = client.post(url, {"config": bravo.config.pk})
    assert response.status_code == 404
    assert b"alpha-secret" not in response.content and b"alpha-answer" not in response.content
    assert not Run.objects.filter(job="replay").exists()
    assert b"alpha-secret" in logged_in(alpha.owner).get(reverse("traffic:conversation", args=[
        alpha.machine.pk, alpha.traffic.conversation])).content


def test_it_404s_a_conversation_the_machine_does_not_have(alpha, bravo):
    url = reverse("traffic:conversation", args=[alpha.machine.pk, bravo.traffic.conversation])
    assert logged_in(alpha.owner).get(url).status_code == 404


def test_it_replays_the_captured_bodies_in_order(alpha, no_dispatch):
    records = conversation(alpha.machine)
    other = EngineConfigFactory(engine=EngineFactory(machine=alpha.machine), name="alpha-other")
    url = reverse("traffic:replay", args=[alpha.machine.pk, "ab" * 16])
    response = logged_in(alpha.teammate).post(url, {"config": other.pk, "reps": "2"})
    run = Run.objects.get(job="replay")
    assert response.status_code == 302 and response.url == reverse("runs:detail", args=[run.pk])
    assert run.config == other and run.created_by == alpha.teammate
    assert run.params["requests"] == [r.request_body for r in records] == [body(0), body(1), body(2)]
    assert (run.params["reps"], run.params["warmup"]) == (2, 0)


def test_it_refuses_to_replay_on_another_teams_config(alpha, bravo, no_dispatch):
    conversation(alpha.machine)
    url = reverse("traffic:replay", args=[alpha.machine.pk, "ab" * 16])
    response = logged_in(alpha.owner).post(url, {"config": bravo.config.pk, "reps": "1"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert "bravo-config" not in response.content.decode()
    assert not Run.objects.filter(job="replay").exists()


def test_it_explains_that_capture_is_off_when_nothing_was_captured(alpha, no_dispatch):
    conversation(alpha.machine, captured=False)
    client = logged_in(alpha.owner)
    html = client.get(reverse("traffic:conversation", args=[alpha.machine.pk, "ab" * 16])).content.decode()
    assert 'id="replay-unavailable"' in html and "Body capture was off" in html and "it is off now" in html
    assert 'id="replay-form"' not in html
    response = client.post(reverse("traffic:replay", args=[alpha.machine.pk, "ab" * 16]),
                           {"config": alpha.config.pk, "reps": "1"})
    assert response.status_code == 400
    assert "turn on body capture first" in response.content.decode()
    assert not Run.objects.filter(job="replay").exists()


def test_it_shows_why_captured_requests_cannot_be_replayed(alpha, no_dispatch):
    TrafficRecordFactory(machine=alpha.machine, conversation="gen", path="/api/generate",
                         request_body={"model": "qwen3", "prompt": "hello"})
    response = logged_in(alpha.owner).post(reverse("traffic:replay", args=[alpha.machine.pk, "gen"]),
                                           {"config": alpha.config.pk, "reps": "1"})
    assert response.status_code == 400
    assert "no chat request of this conversation was captured whole" in response.content.decode()
    assert not Run.objects.filter(job="replay").exists()


def test_it_lets_a_team_admin_turn_body_capture_on_and_off(alpha):
    admin = person(alpha.team, Role.ADMIN, "alpha_admin")
    client = logged_in(admin)
    url = reverse("traffic:capture", args=[alpha.machine.pk])
    assert client.post(url, {"capture_bodies": "on"}, REMOTE_ADDR="10.9.8.7").status_code == 302
    alpha.machine.refresh_from_db()
    assert alpha.machine.capture_bodies
    client.post(url, {})
    alpha.machine.refresh_from_db()
    assert not alpha.machine.capture_bodies
    events = AuditEvent.objects.order_by("id")
    assert [(e.actor, e.action, e.object_type, e.detail["capture_bodies"]) for e in events] == [
        (admin, "changed", "machine", True), (admin, "changed", "machine", False)]
    assert events[0].address == "10.9.8.7"


def test_it_refuses_body_capture_to_a_member_and_shows_no_switch(alpha):
    client = logged_in(alpha.teammate)
    url = reverse("traffic:capture", args=[alpha.machine.pk])
    assert client.post(url, {"capture_bodies": "on"}).status_code == 403
    alpha.machine.refresh_from_db()
    assert not alpha.machine.capture_bodies and not AuditEvent.objects.exists()
    page = client.get(reverse("traffic:page", args=[alpha.machine.pk])).content.decode()
    assert f'action="{url}"' not in page


def test_it_refuses_a_replay_to_a_viewer_and_shows_no_form(alpha, no_dispatch):
    conversation(alpha.machine)
    viewer = person(alpha.team, Role.VIEWER, "alpha_viewer")
    url = reverse("traffic:replay", args=[alpha.machine.pk, "ab" * 16])
    assert logged_in(viewer).post(url, {"config": alpha.config.pk, "reps": "1"}).status_code == 403
    assert not Run.objects.filter(job="replay").exists()
    page = logged_in(viewer).get(reverse("traffic:conversation", args=[alpha.machine.pk, "ab" * 16]))
    assert page.status_code == 200 and f'action="{url}"' not in page.content.decode()


def test_it_links_the_traffic_page_from_home_and_the_config_page(alpha):
    client = logged_in(alpha.owner)
    link = f'href="{reverse("traffic:page", args=[alpha.machine.pk])}"'
    assert link in client.get(reverse("runs:home")).content.decode()
    assert link in client.get(alpha.config.get_absolute_url()).content.decode()


OLLAMA_STEP = {"model": "qwen3:30b", "options": {"num_predict": 64}, "messages": [
    {"role": "system", "content": "agent"}, {"role": "system", "content": "rules"},
    {"role": "user", "content": "read a.py"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"function": {"name": "read", "arguments": {"path": "a.py"}}}]},
    {"role": "tool", "content": "x = 1", "tool_name": "read"},
]}  # fmt: skip


def replayed(alpha, config, front, body):
    path = "/api/chat" if front == "ollama" else "/v1/chat/completions"
    TrafficRecordFactory(machine=alpha.machine, conversation="conv", front=front, path=path,
                         request_body=body)
    response = logged_in(alpha.owner).post(reverse("traffic:replay", args=[alpha.machine.pk, "conv"]),
                                           {"config": config.pk, "reps": "1"})
    assert response.status_code == 302
    return Run.objects.get(job="replay").params["requests"]


def test_it_replays_an_ollama_fronts_step_in_the_openai_api_of_a_llama_server_config(alpha, no_dispatch):
    config = EngineConfigFactory(engine=EngineFactory(machine=alpha.machine, kind="llama-server",
                                                      merge_system_messages=True))  # fmt: skip
    [body] = replayed(alpha, config, "ollama", OLLAMA_STEP)
    assert body["max_tokens"] == 64
    system, _user, assistant, tool = body["messages"]
    assert system == {"role": "system", "content": "agent\n\nrules"}  # merged, as the engine needs
    [call] = assistant["tool_calls"]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {"path": "a.py"}
    assert tool["role"] == "tool" and tool["tool_call_id"] == call["id"]


def test_it_replays_an_openai_fronts_step_in_an_ollama_configs_own_api(alpha, no_dispatch):
    config = EngineConfigFactory(engine=EngineFactory(machine=alpha.machine, kind="ollama"))
    openai_step = {"model": "qwen3", "max_tokens": 32, "messages": [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "read", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
    ]}  # fmt: skip
    [body] = replayed(alpha, config, "openai", openai_step)
    assert body["options"]["num_predict"] == 32
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"path": "a.py"}


def test_it_shows_a_captured_body_without_messages_as_its_prompt(alpha):
    TrafficRecordFactory(machine=alpha.machine, conversation="gen", path="/api/generate",
                         request_body={"model": "qwen3", "prompt": "alpha-generate prompt"})
    url = reverse("traffic:conversation", args=[alpha.machine.pk, "gen"])
    assert "<pre>alpha-generate prompt</pre>" in logged_in(alpha.owner).get(url).content.decode()


def test_it_numbers_each_request_by_its_step_in_the_conversation_as_its_page_does(alpha):
    steps = conversation(alpha.machine, steps=3)
    # A retry: the third request sent again with the same messages (the same turn), a minute later.
    retry = TrafficRecordFactory(machine=alpha.machine, conversation=steps[2].conversation,
                                 turn=steps[2].turn, arrived=timezone.now())
    other = TrafficRecordFactory(machine=alpha.machine, conversation="cd" * 16, turn=5,
                                 arrived=timezone.now() - timedelta(minutes=10))
    url = reverse("traffic:records", args=[alpha.machine.pk])
    records = {r["id"]: r for r in logged_in(alpha.owner).get(url).json()["records"]}
    assert [records[r.pk]["step"] for r in [*steps, retry]] == [1, 2, 3, 4]
    assert records[other.pk]["step"] == 1
    html = logged_in(alpha.owner).get(reverse("traffic:page", args=[alpha.machine.pk])).content.decode()
    assert f"{retry.conversation[:8]}</a> · 4</td>" in html and "· 5</td>" not in html
    conversation_url = reverse("traffic:conversation", args=[alpha.machine.pk, retry.conversation])
    assert "Step 4" in logged_in(alpha.owner).get(conversation_url).content.decode()
