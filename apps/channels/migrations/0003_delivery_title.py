"""The outbox row carries its post's title, so the channels worker no longer reads the
scheduled tasks' table. Rows already waiting get their task's title now."""

from django.db import migrations, models


def titles_fill(apps, schema_editor):
    ChannelDelivery = apps.get_model("integrations", "ChannelDelivery")
    ScheduledTask = apps.get_model("schedules", "ScheduledTask")
    titles = dict(ScheduledTask.objects.filter(pk__in=ChannelDelivery.objects.exclude(task_id="").values("task_id"))
                  .values_list("pk", "title"))
    for delivery in ChannelDelivery.objects.exclude(task_id=""):
        if delivery.task_id in titles:
            ChannelDelivery.objects.filter(pk=delivery.pk).update(title=titles[delivery.task_id][:200])


class Migration(migrations.Migration):

    dependencies = [
        ("integrations", "0002_channel_delivery_outbox"),
        ("schedules", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="channeldelivery",
            name="title",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.RunPython(titles_fill, migrations.RunPython.noop),
    ]
