"""Episodes keep their failure modes, the codes for filters, and their evidence coverage (runs.failures)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0011_episode_process_lost"),
    ]

    operations = [
        migrations.AddField(
            model_name="episode",
            name="failure_modes",
            field=models.JSONField(
                blank=True,
                help_text='How the episode went wrong (runs.failures): [{"code", "steps": [step index, ...]}, ...]; '
                "blank until classified when it ended (manage.py classify_episodes classifies the others).",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="episode",
            name="failure_codes",
            field=models.CharField(
                blank=True,
                default="",
                help_text="The failure modes' codes, each between spaces (' no_tool_call repeated_call '), for filters.",
                max_length=400,
            ),
        ),
        migrations.AddField(
            model_name="episode",
            name="evidence_coverage",
            field=models.FloatField(
                blank=True,
                help_text="Share of the record's duration the signal-reading calls covered before the answer "
                "(signal tasks).",
                null=True,
            ),
        ),
    ]
