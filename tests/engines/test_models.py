import pytest
from django.core.exceptions import ValidationError

from engines.models import Engine
from tests.factories import EngineFactory, MachineFactory

pytestmark = pytest.mark.django_db


def engine_on(host, url, launch=Engine.Launch.EXTERNAL):
    return EngineFactory.build(machine=MachineFactory(host=host), base_url=url, launch=launch)


@pytest.mark.parametrize(
    ("host", "url"),
    [("", "http://127.0.0.1:8080"), ("", "http://localhost:11434/"), ("", "http://[::1]:8000"),
     ("spark-1.lan", "http://spark-1.lan:8080"), ("spark-1.lan", "http://SPARK-1.lan:8080"),
     ("10.0.0.7", "http://10.0.0.7:8000"), ("spark-1.lan", "http://127.0.0.1:8080")],
)
def test_it_accepts_an_engine_on_its_machines_host_or_loopback(host, url):
    engine_on(host, url).full_clean()


@pytest.mark.parametrize(
    ("host", "url"),
    [("", "http://spark-1.lan:8080"), ("spark-1.lan", "http://spark-2.lan:8080"),
     ("spark-1.lan", "http://169.254.169.254/latest/meta-data"), ("10.0.0.7", "http://10.0.0.8:8000")],
)
def test_it_rejects_an_engine_url_off_its_machine(host, url):
    with pytest.raises(ValidationError) as raised:
        engine_on(host, url).full_clean()
    assert "base_url" in raised.value.message_dict
    assert "the host must be the machine's" in raised.value.message_dict["base_url"][0]


def test_it_rejects_a_managed_engine_off_its_machine():
    with pytest.raises(ValidationError):
        engine_on("spark-1.lan", "http://example.org:8080", Engine.Launch.MANAGED).full_clean()
