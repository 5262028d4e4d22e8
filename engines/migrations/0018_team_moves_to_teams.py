"""Team leaves engines for teams (teams' 0002): a machine's team is teams.Team, in Django's state
only, as the table stays engines_team. It runs after every other app's foreign key to the team
points at teams.Team, so nothing still names engines.Team when it leaves the state."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('engines', '0017_config_archived'),
        ('teams', '0002_team_moves_here'),
        ('runs', '0021_metrics_token_team_in_teams'),
        ('traffic', '0004_relay_token_team_in_teams'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='machine',
                name='team',
                field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='machines',
                                        to='teams.team'),
            ),
            migrations.DeleteModel(name='Team'),
        ]),
    ]
