"""Gives every config its revisions and every run the revision it ran with.

A run's settings come from its provenance snapshot (a setting the snapshot lacks did not exist
then: it takes the field's default, as the migration that added it did); a run that never
started takes the config's current settings. Distinct settings become revisions in the order
runs first used them; the config's current settings are its latest revision.
"""
from django.db import migrations

NOT_SETTINGS = frozenset({"id", "engine", "name", "notes", "created", "updated", "archived"})


def _settings(fields, values):
    return {f.name: f.to_python(values.get(f.name, f.get_default())) for f in fields}


def backfill(apps, schema_editor):
    Config = apps.get_model("engines", "EngineConfig")
    Revision = apps.get_model("engines", "ConfigRevision")
    Run = apps.get_model("runs", "Run")
    fields = [f for f in Config._meta.concrete_fields if f.name not in NOT_SETTINGS]
    for config in Config.objects.all().iterator():
        current = {f.name: f.to_python(getattr(config, f.name)) for f in fields}
        made = []

        def revision_for(settings, made=made, config=config):
            for known, revision in made:
                if known == settings:
                    return revision
            revision = Revision.objects.create(config=config, number=len(made) + 1, settings=settings)
            made.append((settings, revision))
            return revision

        for run in Run.objects.filter(config=config).order_by("created", "pk").only("pk", "provenance"):
            snapshot = (run.provenance or {}).get("config")
            settings = _settings(fields, snapshot) if isinstance(snapshot, dict) and snapshot else current
            Run.objects.filter(pk=run.pk).update(revision=revision_for(settings))
        if not made or made[-1][0] != current:
            Revision.objects.create(config=config, number=len(made) + 1, settings=current)


class Migration(migrations.Migration):
    dependencies = [("runs", "0016_run_revision")]
    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
