# The two commands a newcomer needs: `make run` and `make test`. Both set themselves up.
.PHONY: run test deploy migrations check-migrations bench help

help:
	@echo "make run    start DeerFlow on http://$${HOST:-127.0.0.1}:$${PORT:-8000}/ (embedded: SQLite, in-process runs)"
	@echo "make test   run the whole test suite (ARGS=... passes arguments to pytest, tier 1 only)"
	@echo "make deploy start the distributed stack (deploy/compose.yaml: 2 web servers behind HAProxy, Celery, PostgreSQL, Redis) with Podman"
	@echo "make migrations / check-migrations"

run:
	@scripts/run.sh

test:
	@scripts/test.sh $(ARGS)

deploy:
	@scripts/deploy.sh up

migrations:
	@scripts/bootstrap.sh runtime && DJANGO_DEBUG=true .venv/bin/python manage.py makemigrations

check-migrations:
	@scripts/bootstrap.sh runtime && DJANGO_DEBUG=true .venv/bin/python manage.py makemigrations --check --dry-run
