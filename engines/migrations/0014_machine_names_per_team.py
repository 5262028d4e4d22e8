"""Machine names unique per team, not across the server; scheduled sweeps follow the new queues.

A machine outside the default team now has the queue `machine.team-<team id>.<slug>`
(Machine.queue_name). A schedule's beat task names the queue of its first machine, so a task
still naming such a machine's old `machine.<slug>` is moved to the new queue; one whose old
queue is also a default-team machine's (still consumed) is left as it is.
"""

from django.db import migrations, models
from django.utils.text import slugify

DEFAULT_TEAM = "default"


def move_beat_tasks(apps, schema_editor):
    Machine = apps.get_model("engines", "Machine")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    machines = list(Machine.objects.select_related("team"))
    kept = {f"machine.{slugify(m.name)}" for m in machines if m.team.name == DEFAULT_TEAM}
    for machine in machines:
        old = f"machine.{slugify(machine.name)}"
        if machine.team.name != DEFAULT_TEAM and old not in kept:
            new = f"machine.team-{machine.team_id}.{slugify(machine.name)}"
            PeriodicTask.objects.filter(queue=old).update(queue=new)


class Migration(migrations.Migration):

    dependencies = [
        ('engines', '0013_names_unique_per_team'),
        ('django_celery_beat', '0019_alter_periodictasks_options'),
    ]

    operations = [
        migrations.AlterField(
            model_name='machine',
            name='name',
            field=models.CharField(max_length=100),
        ),
        migrations.AddConstraint(
            model_name='machine',
            constraint=models.UniqueConstraint(fields=('team', 'name'), name='machine_name_unique_per_team'),
        ),
        migrations.RunPython(move_beat_tasks, migrations.RunPython.noop),
    ]
