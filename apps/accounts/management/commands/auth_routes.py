"""``manage.py auth_routes``: every URL route and who may call it, from the URL conf itself."""

from django.core.management.base import BaseCommand

from apps.accounts.routes import route_table, websocket_routes


class Command(BaseCommand):
    help = "List every URL route with its auth rule (public / session / session | token scopes / staff / admin)."

    def add_arguments(self, parser):
        parser.add_argument("--admin", action="store_true", help="list each Django admin route instead of one summary line")
        parser.add_argument("--prefix", default="", help="only routes whose path starts with this, e.g. /api/")

    def handle(self, *args, admin: bool = False, prefix: str = "", **options):
        routes = [r for r in [*route_table(), *websocket_routes()] if r.path.startswith(prefix)]
        admin_routes = [r for r in routes if r.namespace == "admin" and r.rule == "admin"]
        rows = [r for r in routes if admin or r not in admin_routes]
        width = max((len(r.path) for r in rows), default=10)
        mwidth = max((len(" ".join(r.methods) or "*") for r in rows), default=1)
        for route in rows:
            self.stdout.write(f"{route.path:<{width}}  {' '.join(route.methods) or '*':<{mwidth}}  {route.rule}")
        if admin_routes and not admin:
            self.stdout.write(f"{'/admin/…':<{width}}  {'*':<{mwidth}}  admin ({len(admin_routes)} Django admin routes; --admin lists them)")
