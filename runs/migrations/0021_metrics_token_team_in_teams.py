"""A metrics token's team is teams.Team now (the same table: state only, nothing changes in the database)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0020_alerts_of_imported_runs'),
        ('teams', '0002_team_moves_here'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='metricstoken',
                name='team',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+',
                                        to='teams.team'),
            ),
        ]),
    ]
