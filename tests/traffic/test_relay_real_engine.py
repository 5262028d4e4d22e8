"""The relay in front of the real llama-server (Gemma 3 270M, self-drafting), driven by the agents'
own client libraries: `ollama` with tools on the Ollama front, `openai` streaming on the OpenAI front.

The engine is started with a chat template that refuses a second system message, as the field
report's 27B model's did, so the per-engine merge is needed for real. `manage.py relay` runs as its
own process on the test database (Postgres). Every figure checked here comes from the engine's own
answer and the relay's record of it; nothing is scripted.
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import ollama
import openai
import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runs.models import Run
from runs.worker import execution
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import EngineConfigFactory, EngineFactory, UserFactory
from tests.live_server import DaphneLiveServerTestCase
from tests.real_engine import GEMMA_270M, llama_server_process, requires_engine
from tests.runs.worker.real_runs import request_rows
from tests.traffic.conftest import postgres_only, relay_process, wait_for
from traffic.models import RelayState, TrafficRecord

pytestmark = [
    requires_engine, postgres_only, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)
]

# A system message anywhere but first is an error, as in the chat template of the field's 27B model.
STRICT_TEMPLATE = """\
{%- for message in messages -%}
{%- if message['role'] == 'system' and not loop.first -%}
{{ raise_exception('System role only at the start') }}
{%- endif -%}
<start_of_turn>{{ message['role'] }}
{{ message['content'] }}<end_of_turn>
{% endfor -%}
{%- if add_generation_prompt -%}<start_of_turn>model
{% endif -%}
"""
# The engine drafts with a second copy of the model: its answers carry draft and accepted counts.
FLAGS = ("--jinja", "-np", "1", "--metrics", "-md", "{model}", "--spec-type", "draft-simple",
         "--spec-draft-n-max", "4")  # fmt: skip

TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}}]  # fmt: skip
SYSTEM = [
    {"role": "system", "content": "You are a coding agent. Answer from the files you read."},
    {"role": "system", "content": "The workspace is a small Django project."},
]
# An agent's second step in Ollama's own shapes: the call's arguments an object, no call id or type.
STEP = [
    {"role": "user", "content": "What does routes.py define?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "read_file", "arguments": {"path": "routes.py"}}}]},
    {"role": "tool", "content": "urlpatterns = [path('runs/', runs), path('configs/', configs)]",
     "tool_name": "read_file"},
]  # fmt: skip
ANSWER_TOKENS = 24


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real llama-server with the strict template, for every test of this module."""
    template = Path(tmp_path_factory.mktemp("template")) / "strict.jinja"
    template.write_text(STRICT_TEMPLATE)
    flags = [f.format(model=GEMMA_270M) for f in FLAGS] + ["--chat-template-file", str(template)]
    with llama_server_process(*flags) as (url, _process):
        yield url


def ollama_step(address: str, messages: list[dict]) -> list[ollama.ChatResponse]:
    client = ollama.Client(host=address)
    options = {"num_predict": ANSWER_TOKENS, "temperature": 0}
    return list(client.chat(model="gemma", messages=messages, tools=TOOLS, stream=True, options=options))


def test_it_needs_the_relays_conversion_for_an_ollama_agent_step(engine_url):
    # Straight to the engine, Ollama's tool-call shape is refused; the relay makes it OpenAI's.
    body = {"messages": STEP, "max_tokens": 4}
    direct = httpx.post(f"{engine_url}/v1/chat/completions", json=body, timeout=60)
    assert direct.status_code == 500 and "tool call type" in direct.text

    engine = EngineFactory(base_url=engine_url, kind="llama-server", merge_system_messages=True)
    with relay_process(engine.machine) as addresses:
        chunks = ollama_step(addresses["ollama"], SYSTEM + STEP)
        wait_for(lambda: TrafficRecord.objects.filter(machine=engine.machine).exists())
    record = TrafficRecord.objects.get(machine=engine.machine)
    final = chunks[-1]
    assert final.done and "".join(c.message.content or "" for c in chunks)
    # The final chunk's counts are the engine's own, and so are the record's.
    assert final.eval_count == record.output_tokens <= ANSWER_TOKENS
    assert final.prompt_eval_count == record.prompt_tokens > 40
    assert (record.front, record.upstream, record.status, record.error) == ("ollama", "openai", 200, "")
    assert record.turn == 5 and record.engine_id == engine.pk
    assert 0 < record.accepted_tokens <= record.draft_tokens
    assert 0 < record.ttft_s < record.e2e_s
    assert record.decode_tps_client == pytest.approx(record.decode_tps_engine, rel=0.25)


def test_it_passes_on_the_engines_refusal_of_two_system_messages_in_the_clients_shape(engine_url):
    as_is = EngineFactory(base_url=engine_url, kind="llama-server", merge_system_messages=False)
    with relay_process(as_is.machine) as addresses:
        with pytest.raises(ollama.ResponseError, match="System role only at the start") as refused:
            ollama_step(addresses["ollama"], SYSTEM + STEP)
        wait_for(lambda: TrafficRecord.objects.filter(machine=as_is.machine).exists())
    assert refused.value.status_code == 400
    record = TrafficRecord.objects.get(machine=as_is.machine)
    assert record.status == 400 and "System role only at the start" in record.error


def test_it_streams_the_openai_front_with_the_engines_usage_and_its_prompt_cache(engine_url):
    engine = EngineFactory(base_url=engine_url, kind="llama-server")
    first = [SYSTEM[0], {"role": "user", "content": "List three uses of a relay in a few words."}]
    with relay_process(engine.machine) as addresses:
        client = openai.OpenAI(base_url=addresses["openai"] + "/v1", api_key="unused")
        usages = []
        for messages in (first, [*first, {"role": "assistant", "content": "Forwarding."},
                                 {"role": "user", "content": "And two more?"}]):  # fmt: skip
            stream = client.chat.completions.create(
                model="gemma", messages=messages, tools=TOOLS, stream=True, max_tokens=ANSWER_TOKENS,
                stream_options={"include_usage": True}, temperature=0,
            )
            chunks = list(stream)
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            usages.append(chunks[-1].usage)
        wait_for(lambda: TrafficRecord.objects.filter(machine=engine.machine).count() == 2)
    records = list(TrafficRecord.objects.filter(machine=engine.machine).order_by("arrived"))
    for usage, record in zip(usages, records, strict=True):
        assert (record.output_tokens, record.prompt_tokens) == (usage.completion_tokens, usage.prompt_tokens)
        assert 0 < record.accepted_tokens <= record.draft_tokens
    # The continuation shares the first request's conversation; the engine's cache held its prefix.
    assert records[0].conversation == records[1].conversation and records[1].turn == 4
    assert records[0].new_prompt_tokens == records[0].prompt_tokens
    assert records[1].new_prompt_tokens < records[1].prompt_tokens / 2



def test_it_replays_a_recorded_conversation_step_for_step_on_the_real_engine(engine_url, monkeypatch):
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)  # run below, here
    engine = EngineFactory(base_url=engine_url, kind="llama-server", merge_system_messages=True,
                           machine__capture_bodies=True)  # fmt: skip
    later = [{"role": "assistant", "content": "Two."}, {"role": "user", "content": "Which lists configs?"}]
    steps = [SYSTEM + STEP[:1], SYSTEM + STEP, SYSTEM + STEP + later]
    with relay_process(engine.machine) as addresses:
        for messages in steps:
            ollama_step(addresses["ollama"], messages)
        wait_for(lambda: TrafficRecord.objects.filter(machine=engine.machine).count() == len(steps))
    recorded = list(TrafficRecord.objects.filter(machine=engine.machine).order_by("arrived"))
    assert len({r.conversation for r in recorded}) == 1 and all(r.request_body for r in recorded)

    owner = UserFactory()
    engine.machine.team.members.add(owner)
    config = EngineConfigFactory(engine=engine, model="gemma", max_tokens=ANSWER_TOKENS)
    web = Client()
    web.force_login(owner)
    url = reverse("traffic:replay", args=[engine.machine.pk, recorded[0].conversation])
    assert web.post(url, {"config": config.pk, "reps": "1"}).status_code == 302
    run = Run.objects.get(job="replay")
    assert execution.claim(run.pk) == execution.CLAIMED
    execution.execute(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error
    replayed = request_rows(run)
    # The same messages reach the same engine: each step's prompt is the recorded one, token for token.
    assert [r["index"] for r in replayed] == list(range(len(steps)))
    assert [r["prompt_tokens"] for r in replayed] == [r.prompt_tokens for r in recorded]


def test_it_warns_of_a_prefix_cache_discard_from_the_records_and_from_the_engines_log(tmp_path):
    log = tmp_path / "engine.log"
    # A 4 MiB RAM cache cannot hold a 2,000-token prompt's state: another conversation evicts it.
    flags = ("-np", "1", "-c", "8192", "--cache-ram", "4", "--log-file", str(log))
    long = " ".join(f"Line {i} of the file says the harbour light turns at dusk." for i in range(150))
    first = [{"role": "user", "content": "A: " + long}]
    with llama_server_process(*flags) as (url, _process):
        engine = EngineFactory(base_url=url, kind="llama-server", log_path=str(log))
        with relay_process(engine.machine) as addresses:
            client = openai.OpenAI(base_url=addresses["openai"] + "/v1", api_key="unused")
            later = [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more?"}]
            for messages in (first, [{"role": "user", "content": "B: " + long}], first + later):
                client.chat.completions.create(model="gemma", messages=messages, max_tokens=4)
            state = RelayState.objects.filter(machine=engine.machine)
            wait_for(lambda: bool(state.values_list("log_warnings", flat=True).first()), timeout=30)
    owner = UserFactory()
    engine.machine.team.members.add(owner)
    web = Client()
    web.force_login(owner)
    answer = web.get(reverse("traffic:records", args=[engine.machine.pk]), {"stats": "1"}).json()
    discards = [w for w in answer["warnings"] if w["kind"] == "prefix-cache-discard"]
    from_records = [w for w in discards if w["conversation"]]
    from_log = [w for w in discards if not w["conversation"]]
    continued = TrafficRecord.objects.filter(machine=engine.machine, turn=3).get()
    assert [(w["conversation"], w["step"]) for w in from_records] == [(continued.conversation, 2)]
    assert continued.new_prompt_tokens > 0.9 * continued.prompt_tokens > 1000
    assert from_log and all("exceeds cache size limit" in w["message"] for w in from_log)

# --- Acceptance: both clients' requests appear live on the machine's Traffic page ---

ROWS = "#latest-requests tbody tr"


@pytest.fixture(scope="class")
def class_engine_url(request: pytest.FixtureRequest, engine_url: str) -> None:
    request.cls.engine_url = engine_url


@pytest.mark.browser
@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)
@pytest.mark.skipif(not settings.REDIS_URL, reason="the relay's records reach the page's socket by Redis")
@pytest.mark.usefixtures("class_engine_url")
class RelayTrafficPageTest(DaphneLiveServerTestCase):
    """daphne serves the page; `manage.py relay` (its own process) stores and broadcasts the records."""

    engine_url: str

    def test_it_shows_an_ollama_agent_and_an_openai_stream_live_with_their_figures(self) -> None:
        engine = EngineFactory(base_url=self.engine_url, kind="llama-server", merge_system_messages=True)
        owner = UserFactory(username="alice")
        engine.machine.team.members.add(owner)
        relay = relay_process(engine.machine)
        with logged_in_chromium(self.live_server_url, owner) as browser, relay as addresses:
            browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SOCKET_RECORDS_JS})
            browser.get(browser.base_url + reverse("traffic:page", args=[engine.machine.pk]))
            WebDriverWait(browser, 15).until(lambda d: d.find_element(By.ID, "live-state").text == "live")
            ollama_step(addresses["ollama"], SYSTEM + STEP)
            client = openai.OpenAI(base_url=addresses["openai"] + "/v1", api_key="unused")
            list(client.chat.completions.create(model="gemma", messages=SYSTEM[:1] + STEP[:1], stream=True,
                                                max_tokens=ANSWER_TOKENS))  # fmt: skip
            WebDriverWait(browser, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ROWS)) == 2)
            rows = browser.find_elements(By.CSS_SELECTOR, ROWS)
            # Every record reaches the page by its socket. A row's data-via may still read "polling":
            # until the first socket message the page also polls (the embedded default's socket hears
            # nothing), and a poll can land between a record's commit and its socket message.
            ids = {row.get_attribute("data-record") for row in rows}
            WebDriverWait(browser, 15).until(lambda d: ids <= set(d.execute_script(HEARD_JS)))
            row_texts = [row.text for row in rows]
            WebDriverWait(browser, 15).until(
                lambda d: "2 requests" in d.find_element(By.CSS_SELECTOR, '[data-figure="requests"]').text)
            figures = {name: browser.find_element(By.CSS_SELECTOR, f'[data-figure="{name}"]').text
                       for name in ("ttft", "new_input_share", "generation_share")}  # fmt: skip
            acceptance = browser.execute_script(ACCEPTANCE_JS)
            browser.save_screenshot(str(Path(tempfile.gettempdir()) / "traffic-real-engine.png"))
        records = list(TrafficRecord.objects.filter(machine=engine.machine).order_by("arrived"))
        assert [r.front for r in records] == ["ollama", "openai"]
        assert all("—" not in text for text in figures.values()), figures
        assert "ms" in figures["ttft"] or " s" in figures["ttft"]
        assert "%" in figures["new_input_share"]
        assert acceptance and all(0 < v <= 100 for v in acceptance), acceptance
        # Newest first on the page.
        for record, text in zip(reversed(records), row_texts, strict=True):
            assert record.model in text and str(record.output_tokens) in text


# Injected before the page's scripts: the ids of the records each socket message brought.
SOCKET_RECORDS_JS = """
window.__socketRecords = [];
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(url, protocols) {
    super(url, protocols);
    this.addEventListener("message", (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "traffic.records") {
        message.records.forEach((r) => window.__socketRecords.push(String(r.id)));
      }
    });
  }
};
"""
HEARD_JS = "return window.__socketRecords;"

ACCEPTANCE_JS = """
const chart = Chart.getChart(document.getElementById("acceptance-chart"));
return chart.data.datasets.flatMap(d => d.data).filter(v => v !== null);
"""
