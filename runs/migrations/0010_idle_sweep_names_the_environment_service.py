"""The schedule that ends idle external episodes names the function where it now lives (``runs.environment.service``)."""
from django.db import migrations

OLD = "runs.environment.end_idle_episodes"
NEW = "runs.environment.service.end_idle_episodes"


def rename(old: str, new: str):
    def forwards(apps, schema_editor):
        apps.get_model("django_q", "Schedule").objects.filter(func=old).update(func=new)

    return forwards


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0009_heartbeat_help_names_the_leases"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(rename(OLD, NEW), rename(NEW, OLD))]
