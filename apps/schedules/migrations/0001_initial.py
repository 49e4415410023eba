"""Scheduled tasks move here from the runs app. State only: the tables keep their names
(``runs_scheduledtask``, ``runs_scheduledtaskrun``) and every row, in both directions; runs'
0007 drops the models from its own state once this has taken them over. Content types (and
with them permissions and admin log entries) are relabelled, so nothing granted is lost."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import apps.schedules.models

MODELS = ["scheduledtask", "scheduledtaskrun"]


def _relabel(apps, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=old, model__in=MODELS).exists():
        return  # a new database: post_migrate makes them under the new label
    # A downgrade done in two steps (runs first, then this app) lets post_migrate make fresh
    # content types for the old label in between; those are empty copies, the originals
    # carry the grants, so the copies give way.
    ContentType.objects.filter(app_label=new, model__in=MODELS).delete()
    ContentType.objects.filter(app_label=old, model__in=MODELS).update(app_label=new)


def content_types_forward(apps, schema_editor):
    _relabel(apps, "runs", "schedules")


def content_types_backward(apps, schema_editor):
    _relabel(apps, "schedules", "runs")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
        ("integrations", "0002_channel_delivery_outbox"),
        ("runs", "0006_scheduled_task_deliver_to"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='ScheduledTask',
                    fields=[
                        ('id', models.CharField(default=apps.schedules.models.new_scheduled_task_id, editable=False, max_length=64, primary_key=True, serialize=False)),
                        ('title', models.CharField(max_length=200)),
                        ('prompt', models.TextField()),
                        ('assistant_id', models.CharField(default='lead_agent', max_length=128)),
                        ('options', models.JSONField(blank=True, default=dict)),
                        ('schedule_type', models.CharField(choices=[('cron', 'Cron'), ('once', 'Once')], default='cron', max_length=8)),
                        ('cron', models.CharField(blank=True, default='', help_text='Cron schedules: five fields, minute hour day-of-month month day-of-week.', max_length=120)),
                        ('run_at', models.DateTimeField(blank=True, help_text='One-off schedules: when the task runs.', null=True)),
                        ('completed_at', models.DateTimeField(blank=True, null=True)),
                        ('timezone', models.CharField(default='UTC', help_text='IANA name; the cron is read in this zone.', max_length=64)),
                        ('enabled', models.BooleanField(default=True)),
                        ('context_mode', models.CharField(choices=[('fresh_thread_per_run', 'Fresh Thread Per Run'), ('reuse_thread', 'Reuse Thread')], default='fresh_thread_per_run', max_length=32)),
                        ('thread_id', models.CharField(blank=True, default='', max_length=64)),
                        ('overlap_policy', models.CharField(choices=[('skip', 'Skip')], default='skip', max_length=16)),
                        ('next_run_at', models.DateTimeField(blank=True, null=True)),
                        ('last_run_at', models.DateTimeField(blank=True, null=True)),
                        ('last_run_id', models.CharField(blank=True, default='', max_length=64)),
                        ('last_thread_id', models.CharField(blank=True, default='', max_length=64)),
                        ('last_error', models.TextField(blank=True, default='')),
                        ('run_count', models.PositiveIntegerField(default=0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('deliver_to', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='scheduled_tasks', to='integrations.channelconnection')),
                        ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scheduled_tasks', to=settings.AUTH_USER_MODEL)),
                        ('periodic_task', models.OneToOneField(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='scheduled_task', to='django_celery_beat.periodictask')),
                    ],
                    options={
                        'db_table': 'runs_scheduledtask',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='ScheduledTaskRun',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('thread_id', models.CharField(blank=True, default='', max_length=64)),
                        ('trigger', models.CharField(choices=[('scheduled', 'Scheduled'), ('manual', 'Manual')], max_length=16)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('success', 'Success'), ('error', 'Error'), ('skipped', 'Skipped'), ('interrupted', 'Interrupted')], max_length=16)),
                        ('error', models.TextField(blank=True, default='')),
                        ('scheduled_for', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='scheduled_task_runs', to='runs.run')),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='task_runs', to='schedules.scheduledtask')),
                    ],
                    options={
                        'db_table': 'runs_scheduledtaskrun',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AddIndex(
                    model_name='scheduledtask',
                    index=models.Index(fields=['owner', '-created_at'], name='sched_task_owner_created_idx'),
                ),
                migrations.AddIndex(
                    model_name='scheduledtaskrun',
                    index=models.Index(fields=['task', '-created_at'], name='sched_run_task_created_idx'),
                ),
                migrations.AddConstraint(
                    model_name='scheduledtaskrun',
                    constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['queued', 'running'])), fields=('task',), name='uq_scheduled_task_run_active'),
                ),
            ],
        ),
        migrations.RunPython(content_types_forward, content_types_backward),
    ]
