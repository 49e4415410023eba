import pytest
from django.core.management import call_command


@pytest.mark.db_tier
@pytest.mark.django_db
def test_models_and_migrations_agree():
    # --check exits non-zero when a model change has no migration.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
