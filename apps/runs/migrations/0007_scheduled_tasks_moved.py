"""Scheduled tasks now belong to apps.schedules (its 0001 took the models over, tables and
rows untouched): drop them from this app's state only."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0006_scheduled_task_deliver_to"),
        ("schedules", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(model_name="scheduledtaskrun", name="task"),
                migrations.RemoveField(model_name="scheduledtaskrun", name="run"),
                migrations.DeleteModel(name="ScheduledTask"),
                migrations.DeleteModel(name="ScheduledTaskRun"),
            ],
        ),
    ]
