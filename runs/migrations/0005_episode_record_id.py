"""Each episode gets a record id of its own; the episodes made before keep the suite's id of their instance."""
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_instance_ids(apps, schema_editor):
    Episode = apps.get_model("runs", "Episode")
    Instance = apps.get_model("benchmark", "Instance")
    Episode.objects.update(record_id=Subquery(Instance.objects.filter(pk=OuterRef("instance_id")).values("record_id")[:1]))


class Migration(migrations.Migration):
    dependencies = [
        ("benchmark", "0002_release_lines_and_record_ids"),
        ("runs", "0004_run_prompt_set"),
    ]

    operations = [
        migrations.AddField(
            model_name="episode",
            name="record_id",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(copy_instance_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="episode",
            name="record_id",
            field=models.CharField(
                help_text="The opaque record id this episode's agent sees, its own: no other episode of the instance "
                "nor of its run has it (shaped like the release's id, see runs.services.episode_record_ids); an "
                "imported episode keeps the release's id its trajectory names.",
                max_length=64,
            ),
        ),
    ]
