"""Episodes an external agent walks away from end as abandoned; a django-q2 schedule ends them every minute."""
from django.db import migrations, models

IDLE_SWEEP = "runs.environment.end_idle_episodes"


def schedule_idle_sweep(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        func=IDLE_SWEEP, defaults={"name": "end idle external episodes", "schedule_type": "I", "minutes": 1}
    )


def unschedule_idle_sweep(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=IDLE_SWEEP).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0005_episode_record_id'),
        ('django_q', '0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more'),
    ]

    operations = [
        migrations.AlterField(
            model_name='episode',
            name='ended_by',
            field=models.CharField(blank=True, choices=[('final_answer', 'Final Answer'), ('format_failure', 'Format Failure'), ('turn_limit', 'Turn Limit'), ('tool_call_limit', 'Tool Call Limit'), ('context_exceeded', 'Context Exceeded'), ('cost_cap', 'Cost Cap'), ('provider_error', 'Provider Error'), ('cancelled', 'Cancelled'), ('abandoned', 'abandoned (an external agent stopped acting)')], max_length=32),
        ),
        migrations.RunPython(schedule_idle_sweep, unschedule_idle_sweep),
    ]
