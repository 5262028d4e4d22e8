import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("engines", "0004_team")]
AFTER = [("engines", "0006_machine_team_required")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_it_puts_every_existing_user_and_machine_in_the_default_team():
    apps = migrate(BEFORE)
    User = apps.get_model("auth", "User")
    Machine, Engine = apps.get_model("engines", "Machine"), apps.get_model("engines", "Engine")
    for name in ("ann", "bob"):
        User.objects.create(username=name)
    lan = Machine.objects.create(name="spark-1", bandwidth_gbps=273, memory_gb=121)
    local = Machine.objects.create(name="demo-box", bandwidth_gbps=273, memory_gb=121)
    Engine.objects.create(machine=lan, name="local", kind="ollama", base_url="http://127.0.0.1:11434")
    Engine.objects.create(machine=lan, name="lan", kind="vllm", base_url="http://spark-1.lan:8000")
    Engine.objects.create(machine=local, name="sim", kind="ollama", base_url="http://localhost:11500")
    try:
        apps = migrate(AFTER)
        Team, Machine = apps.get_model("engines", "Team"), apps.get_model("engines", "Machine")
        team = Team.objects.get()
        assert team.name == "default"
        assert sorted(team.members.values_list("username", flat=True)) == ["ann", "bob"]
        hosts = dict(Machine.objects.filter(team=team).values_list("name", "host"))
        assert hosts == {"spark-1": "spark-1.lan", "demo-box": ""}
    finally:
        migrate(executor_leaf())


def executor_leaf():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
