"""Every machine belongs to a team (0005 gave the existing ones the "default" team)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('engines', '0005_default_team'),
    ]

    operations = [
        migrations.AlterField(
            model_name='machine',
            name='team',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='machines', to='engines.team'),
        ),
    ]
