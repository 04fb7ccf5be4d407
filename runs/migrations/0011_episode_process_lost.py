"""An episode whose run was played by a process that stopped ends as process_lost (runs.queue.lifecycle.end_lost_run)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0010_idle_sweep_names_the_environment_service'),
    ]

    operations = [
        migrations.AlterField(
            model_name='episode',
            name='ended_by',
            field=models.CharField(blank=True, choices=[('final_answer', 'Final Answer'), ('format_failure', 'Format Failure'), ('turn_limit', 'Turn Limit'), ('tool_call_limit', 'Tool Call Limit'), ('context_exceeded', 'Context Exceeded'), ('cost_cap', 'Cost Cap'), ('provider_error', 'Provider Error'), ('cancelled', 'Cancelled'), ('abandoned', 'abandoned (an external agent stopped acting)'), ('process_lost', 'process lost (the process playing its run stopped)')], max_length=32),
        ),
    ]
