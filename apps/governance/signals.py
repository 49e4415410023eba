"""Drop this process's cached budget rows when an admin changes one."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from apps.governance.budgets import invalidate_budget_cache
from apps.governance.models import Budget


@receiver([post_save, post_delete], sender=Budget)
def _budget_changed(**_kwargs) -> None:
    invalidate_budget_cache()
