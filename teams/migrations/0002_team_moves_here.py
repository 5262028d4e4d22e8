"""Team moves from engines to teams, in Django's state only: its table keeps its name
(engines_team, and engines_team_members for its members), so every row and id stays.

The foreign keys of teams' own models point at teams.Team here; those of runs, traffic and
engines in their apps' next migrations (engines' last, where engines.Team leaves the state).
The content type follows the model, so permissions and admin history keep pointing at it.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _move_content_type(apps, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=new, model="team").exists():
        ContentType.objects.filter(app_label=old, model="team").update(app_label=new)


def forwards(apps, schema_editor):
    _move_content_type(apps, "engines", "teams")


def backwards(apps, schema_editor):
    _move_content_type(apps, "teams", "engines")


class Migration(migrations.Migration):

    dependencies = [
        ('teams', '0001_roles_and_audit'),
        ('engines', '0017_config_archived'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Team',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                               verbose_name='ID')),
                    ('name', models.CharField(max_length=100, unique=True)),
                    ('members', models.ManyToManyField(blank=True, related_name='teams',
                                                       to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'engines_team',
                    'ordering': ['name'],
                },
            ),
            migrations.AlterField(
                model_name='auditevent',
                name='team',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                        related_name='audit_events', to='teams.team'),
            ),
            migrations.AlterField(
                model_name='teamrole',
                name='team',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='roles',
                                        to='teams.team'),
            ),
        ]),
        migrations.RunPython(forwards, backwards),
    ]
