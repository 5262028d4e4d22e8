"""A relay token's team is teams.Team now (the same table: state only, nothing changes in the database)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('traffic', '0003_relay_token'),
        ('teams', '0002_team_moves_here'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='relaytoken',
                name='team',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+',
                                        to='teams.team'),
            ),
        ]),
    ]
