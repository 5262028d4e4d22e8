"""engines/recipes/checks.py through every interface that writes a config: the web form, the admin,
`manage.py loadconfigs` and the config matrix refuse a flag outside the allowlist or a model path
outside the model directories, for every user (a superuser too), saying which and why, and write
nothing. (The JSON API only reads runs: it writes no config.) The config page reads no file that is
not a GGUF inside the model directories."""
from __future__ import annotations

import html

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from engines.models import EngineConfig
from tests.factories import EngineConfigFactory, EngineFactory, UserFactory

pytestmark = pytest.mark.django_db

LOG_FILE = "--log-file writes a file: refused for every user"
PATH_MODEL = "is not a model name inside this machine&#x27;s model directories"


@pytest.fixture
def engine():
    return EngineFactory(name="llama", kind="llama-server")


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def form_data(engine, **values):
    data = {"name": "qwen3", "engine": engine.pk, "model": "qwen3-8b.gguf", "lookahead": 0,
            "temperature": 0, "seed": 0, "max_tokens": 256, "preheat_s": 0}
    return data | values


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"extra_flags": "-ngl 99 --log-file /tmp/x.log"}, LOG_FILE),
        ({"extra_flags": "--path / --host 0.0.0.0"}, "--path reads a file: refused for every user"),
        ({"extra_flags": "--foo 1"}, "--foo is not an allowed llama-server flag; allowed: -ngl"),
        ({"model": "/etc/passwd"}, PATH_MODEL),
        ({"model": "../../etc/passwd"}, PATH_MODEL),
        ({"kv_cache_dtype": "--log-file"}, "KV-cache dtype: &#x27;--log-file&#x27; is not a name"),
    ],
)
def test_it_refuses_in_the_config_form_and_saves_nothing(alice_client, engine, values, message):
    response = alice_client.post(reverse("engines:config-create"), form_data(engine, **values))
    assert response.status_code == 400 and message in response.content.decode()
    assert not EngineConfig.objects.exists()


def test_it_refuses_in_the_config_form_when_editing_too(alice_client, engine):
    config = EngineConfigFactory(engine=engine, name="qwen3", extra_flags="-ngl 99")
    url = reverse("engines:config-edit", args=[config.pk])
    response = alice_client.post(url, form_data(engine, extra_flags="--trust-remote-code"))
    assert response.status_code == 400 and "--trust-remote-code loads code" in response.content.decode()
    config.refresh_from_db()
    assert config.extra_flags == "-ngl 99"


def test_it_saves_allowed_flags_from_the_config_form(alice_client, engine):
    data = form_data(engine, extra_flags="-ngl 99 -fa=on")
    response = alice_client.post(reverse("engines:config-create"), data)
    assert response.status_code == 302
    assert EngineConfig.objects.get().extra_flags == "-ngl 99 -fa=on"


def test_it_refuses_in_the_admin_for_a_superuser_too(admin_client, engine):
    data = form_data(engine, extra_flags="--settings x --pythonpath /tmp", thinking="", reasoning_effort="")
    add = "/admin/engines/engineconfig/add/"
    response = admin_client.post(add, data)
    assert response.status_code == 200
    assert "--settings loads code: refused for every user" in response.content.decode()
    response = admin_client.post(add, data | {"extra_flags": "", "model": "/etc/shadow"})
    assert response.status_code == 200 and PATH_MODEL in response.content.decode()
    assert not EngineConfig.objects.exists()


YAML = """
machines: [{name: spark-1, bandwidth_gbps: 273, memory_gb: 121}]
engines:  [{name: box, machine: spark-1, kind: KIND, url: "http://127.0.0.1:11500", launch: managed}]
configs:
  - {name: fine, engine: box, model: demo}
  - {name: refused, engine: box, model: MODEL, extra_flags: "FLAGS"}
"""


@pytest.mark.parametrize(
    ("kind", "model", "flags", "message"),
    [
        ("vllm", "org/name", "--trust-remote-code", "extra_flags: --trust-remote-code loads code"),
        ("ollama", "qwen3:8b", "LD_PRELOAD=/tmp/x.so", "extra_flags: LD_PRELOAD loads code"),
        ("llama-server", "/etc/passwd", "", "model: '/etc/passwd' is not a model name inside"),
        ("sglang", "org/name", "--host=0.0.0.0", "extra_flags: --host binds a host or port"),
    ],
)
def test_it_refuses_in_the_yaml_loader_and_writes_nothing(tmp_path, kind, model, flags, message):
    path = tmp_path / "configs.yaml"
    path.write_text(YAML.replace("KIND", kind).replace("MODEL", model).replace("FLAGS", flags))
    with pytest.raises(CommandError, match=r"configs\[1\] \(refused\)\.") as refused:
        call_command("loadconfigs", str(path))
    assert message in str(refused.value)
    assert not EngineConfig.objects.exists()


def test_it_refuses_matrix_combinations_outside_the_allowlists_and_creates_none(alice_client, engine):
    base = EngineConfigFactory(engine=engine, name="qwen3", model="qwen3-8b.gguf")
    url = reverse("engines:config-matrix", args=[base.pk])
    data = {"model_files": "Q4 /etc/passwd\nQ8 ../x.gguf", "action": "create"}
    response = alice_client.post(url, data)
    page = html.unescape(response.content.decode())
    assert page.count('data-state="refused"') == 2 and "is not a model name inside" in page
    # A base row written behind the form's back: every combination inherits its flags, and is refused.
    EngineConfig.objects.filter(pk=base.pk).update(extra_flags="--log-file /tmp/x")
    response = alice_client.post(url, {"lookaheads": "0,4", "action": "create"})
    page = html.unescape(response.content.decode())
    assert page.count('data-state="refused"') == 2 and LOG_FILE in page
    assert list(EngineConfig.objects.all()) == [base]


def test_it_shows_no_bytes_of_a_file_that_is_not_a_model_on_the_config_page(alice_client, tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("SPARKDASH_MODEL_DIRS", str(tmp_path))
    (tmp_path / "notes.gguf").write_bytes(b"root:x:0:0:SECRET-FIRST-BYTES")
    secret = tmp_path.parent / f"{tmp_path.name}-outside.gguf"
    secret.write_bytes(b"ROOT-SECRET-OUTSIDE")
    pages = []
    for model in ("/etc/passwd", "/etc/no-such-file", str(secret), str(tmp_path / "notes.gguf")):
        config = EngineConfigFactory(model=model)  # written directly, as a row behind the form's back
        pages.append(alice_client.get(config.get_absolute_url()).content.decode())
    for page in pages:
        assert "root:" not in page and "SECRET" not in page and "not a GGUF file" not in page
        assert 'id="gguf"' not in page


def test_it_lets_only_the_web_servers_own_setting_allow_more_in_the_form(alice_client, engine, monkeypatch):
    data = form_data(engine, extra_flags="--path /srv/www")
    response = alice_client.post(reverse("engines:config-create"), data)
    assert response.status_code == 400 and "--path reads a file" in response.content.decode()
    monkeypatch.setenv("SPARKDASH_ALLOW_FLAGS", "llama-server:--path")
    assert alice_client.post(reverse("engines:config-create"), data).status_code == 302
    assert EngineConfig.objects.get().extra_flags == "--path /srv/www"


@pytest.mark.parametrize(
    ("kind", "values", "message"),
    [
        ("llama-server", {"speculative_method": "draft-simple", "lookahead": 4},
         "Draft model: draft-simple needs a draft model (-md), and none is set"),
        ("llama-server", {"speculative_method": "medusa", "lookahead": 4},
         "Speculative method: medusa is not a llama-server --spec-type"),
    ],
)
def test_it_refuses_what_a_managed_engines_recipe_cannot_launch_with_the_reason(alice_client, kind, values,
                                                                                message):
    engine = EngineFactory(name="managed", kind=kind, launch="managed", binary="llama-server")
    response = alice_client.post(reverse("engines:config-create"), form_data(engine, **values))
    page = response.content.decode()
    assert response.status_code == 400 and message in page
    field = message.partition(":")[0].lower().replace(" ", "_")
    assert f'id="id_{field}"' in page and "aria-invalid" in page
    assert f"{field}:" not in page  # the field's label says which, not its internal name
    assert not EngineConfig.objects.exists()


def test_it_leaves_an_external_engines_launch_settings_to_the_engine(alice_client, engine):
    values = form_data(engine, speculative_method="draft-simple", lookahead=4)
    assert alice_client.post(reverse("engines:config-create"), values).status_code == 302


@pytest.mark.parametrize(
    ("kind", "method", "message"),
    [
        ("llama-server", "medusa", "Speculative method: medusa is not a llama-server --spec-type"),
        ("ollama", "eagle3", "eagle3&#x27; means nothing to Ollama"),
    ],
)
def test_it_refuses_a_speculative_method_an_external_engines_kind_does_not_have(alice_client, kind, method,
                                                                                 message):
    engine = EngineFactory(name="external", kind=kind)
    assert not engine.managed
    response = alice_client.post(reverse("engines:config-create"),
                                 form_data(engine, speculative_method=method, lookahead=4))
    assert response.status_code == 400 and message in response.content.decode()
    assert not EngineConfig.objects.exists()


def test_it_says_a_refusal_in_japanese_under_the_fields_label_once(alice_client, engine):
    data = form_data(engine, extra_flags="--foo 1")
    response = alice_client.post(reverse("engines:config-create"), data, HTTP_ACCEPT_LANGUAGE="ja")
    page = response.content.decode()
    assert "追加フラグ: --foo は llama-server で許可されたフラグではありません" in page
    assert "追加フラグ: 追加フラグ" not in page and "extra_flags:" not in page
