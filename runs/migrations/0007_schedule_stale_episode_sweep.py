"""Episodes whose queue worker was lost are taken up, and their runs finished, by a django-q2 schedule every minute."""
from django.db import migrations

STALE_SWEEP = "runs.sweep.sweep_runs"


def schedule_stale_sweep(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        func=STALE_SWEEP,
        defaults={"name": "recover episodes of lost workers, finish their runs", "schedule_type": "I", "minutes": 1},
    )


def unschedule_stale_sweep(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=STALE_SWEEP).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0006_episode_abandoned'),
        ('django_q', '0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more'),
    ]

    operations = [
        migrations.RunPython(schedule_stale_sweep, unschedule_stale_sweep),
    ]
