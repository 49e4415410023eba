"""The admin as DeerFlow's operator console: branding, a link to the Console page, and
django-celery-beat's tables taken out of sight. Beat entries are written by
``apps.schedules`` from each ScheduledTask; an entry edited by hand would fire a task
the app does not know about, or be overwritten on the task's next save."""

from django.contrib import admin
from django.contrib.admin.exceptions import NotRegistered
from django_celery_beat import models as beat_models

admin.site.site_header = "DeerFlow administration"
admin.site.site_title = "DeerFlow admin"
admin.site.index_title = "Operator console"
admin.site.site_url = "/console/"

for model in (beat_models.PeriodicTask, beat_models.IntervalSchedule, beat_models.CrontabSchedule,
              beat_models.SolarSchedule, beat_models.ClockedSchedule):
    try:
        admin.site.unregister(model)
    except NotRegistered:
        pass
