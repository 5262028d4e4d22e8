"""engines/migrations/0014: scheduled sweeps' beat tasks follow their machine to its new queue."""
import pytest

from tests.engines.test_default_team_migration import executor_leaf, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("engines", "0013_names_unique_per_team"),
          ("django_celery_beat", "0019_alter_periodictasks_options")]
AFTER = [("engines", "0014_machine_names_per_team")]


def test_it_moves_a_beat_task_to_its_machines_new_queue_and_keeps_the_default_teams():
    apps = migrate(BEFORE)
    Team, Machine = apps.get_model("engines", "Team"), apps.get_model("engines", "Machine")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    every = IntervalSchedule.objects.create(every=60, period="seconds")
    lab = Team.objects.create(name="lab")
    default = Team.objects.create(name="default")
    Machine.objects.create(name="spark-1", team=lab, bandwidth_gbps=273, memory_gb=121)
    Machine.objects.create(name="demo-box", team=default, bandwidth_gbps=273, memory_gb=121)
    for name, queue in (("lab", "machine.spark-1"), ("demo", "machine.demo-box")):
        PeriodicTask.objects.create(name=name, task="runs.tasks.fire_schedule", interval=every, queue=queue)
    try:
        apps = migrate(AFTER)
        tasks = apps.get_model("django_celery_beat", "PeriodicTask").objects
        queues = dict(tasks.values_list("name", "queue"))
        assert queues == {"lab": f"machine.team-{lab.pk}.spark-1", "demo": "machine.demo-box"}
    finally:
        migrate(executor_leaf())
