"""The scope table: every route that changes anything, by a token holding each scope alone.

The routes come from walking the URL resolver (``django.urls.get_resolver()``), so a route added
tomorrow is in the walk without anyone listing it. For every URL pattern, every method other
than GET/HEAD/OPTIONS that its view has (a function view: all four, since it cannot say), and
every scope, the test sends the request with ``Authorization: Bearer`` and a token holding only
that scope. Its owner is staff, so staff-only routes are reached past their staff check: the
scope alone must stop the token. The answer must be 403 with the ``detail`` the scope check
gives, unless the route declares exactly that scope for that method (then the token is let in,
and what the route does next is its own tests' business).

Beside the walk, two reviewed lists that a change to a route's scope has to touch:

- ``TOKEN_ROUTES``: every (method, route) that lets a token change something, with the one scope
  it needs. A route that starts taking tokens, changes its scope or stops taking tokens fails
  ``test_the_scopes_routes_declare_are_the_reviewed_ones`` until this list says so.
- ``ANY_TOKEN``: (method, route) pairs allowed to take *any* valid token (``None`` in
  ``token_scopes``) on a mutating method, each with its reason. None is.

Routes that take no token need no entry: refusing is the default, and the walk checks it.

``/api/langgraph/<x>`` mounts the same URL modules as ``/api/<x>`` (deerflow_site/api_urls.py):
the walk takes each route once, under /api/, and ``test_the_langgraph_routes_are_aliases`` holds
every alias to its twin's very pattern (same view, same ``token_scopes``), so what the walk
proves of the twin holds of the alias; a token's refusal on the alias is also sent for real.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern, RoutePattern
from rest_framework.permissions import IsAdminUser
from rest_framework.test import APIClient
from rest_framework.views import APIView

from apps.accounts.models import PersonalAccessToken
from apps.accounts.permissions import ANY_SCOPE, TOKEN_NOT_ALLOWED, lacks_scope_message, required_scope, view_token_scopes
from apps.accounts.services import token_create
from deerflow_site.api_urls import LANGGRAPH_PREFIX, canonical_path

pytestmark = pytest.mark.django_db

MUTATING = ("POST", "PUT", "PATCH", "DELETE")
SCOPES = tuple(PersonalAccessToken.Scope.values)

# Every (method, route) that lets a token change something, and the one scope it needs. The
# "read by POST" ones change nothing (LangGraph's API searches and pages by POST).
TOKEN_ROUTES = {
    # Threads and their files.
    ("POST", "/api/threads"): "threads:write",
    ("POST", "/api/threads/search"): "threads:read",  # read by POST
    ("PATCH", "/api/threads/<str:thread_id>"): "threads:write",
    ("DELETE", "/api/threads/<str:thread_id>"): "threads:write",
    ("PUT", "/api/threads/<str:thread_id>/pin"): "threads:write",
    ("DELETE", "/api/threads/<str:thread_id>/pin"): "threads:write",
    ("PUT", "/api/threads/<str:thread_id>/tags"): "threads:write",
    ("POST", "/api/tags"): "threads:write",
    ("PATCH", "/api/tags/<int:tag_id>"): "threads:write",
    ("DELETE", "/api/tags/<int:tag_id>"): "threads:write",
    ("POST", "/api/threads/<str:thread_id>/state"): "threads:write",
    ("POST", "/api/threads/<str:thread_id>/state/checkpoint"): "threads:read",  # read by POST
    ("POST", "/api/threads/<str:thread_id>/history"): "threads:read",  # read by POST
    ("POST", "/api/threads/<str:thread_id>/uploads"): "threads:write",
    ("DELETE", "/api/threads/<str:thread_id>/uploads/<str:filename>"): "threads:write",
    ("PUT", "/api/threads/<str:thread_id>/artifacts/<path:artifact_path>"): "threads:write",
    ("PUT", "/api/threads/<str:thread_id>/runs/<str:run_id>/feedback"): "threads:write",
    ("DELETE", "/api/threads/<str:thread_id>/runs/<str:run_id>/feedback"): "threads:write",
    # Thread actions.
    ("POST", "/api/threads/<str:thread_id>/runs/regenerate"): "runs:create",
    ("POST", "/api/threads/<str:thread_id>/runs/edit-regenerate"): "runs:create",
    # DeerFlow's prepare steps change nothing, but exist only to start the run that follows.
    ("POST", "/api/threads/<str:thread_id>/runs/regenerate/prepare"): "runs:create",
    ("POST", "/api/threads/<str:thread_id>/runs/edit-regenerate/prepare"): "runs:create",
    ("POST", "/api/threads/<str:thread_id>/branches"): "threads:write",
    ("POST", "/api/threads/<str:thread_id>/compact"): "threads:write",
    ("POST", "/api/threads/<str:thread_id>/suggestions"): "threads:read",  # read by POST (asks the model, stores nothing)
    ("PUT", "/api/threads/<str:thread_id>/goal"): "threads:write",
    ("DELETE", "/api/threads/<str:thread_id>/goal"): "threads:write",
    ("POST", "/api/threads/<str:thread_id>/versions"): "threads:write",  # shows another answer version (no run)
    # Shared chats (apps/shares): a link to a snapshot is made and revoked like the thread's own edits.
    ("POST", "/api/threads/<str:thread_id>/shares"): "threads:write",
    ("DELETE", "/api/shares/<str:share_id>"): "threads:write",
    ("POST", "/api/input-polish"): "runs:create",  # asks the model to rewrite a draft, stores nothing
    # Runs. Cancelling needs runs:cancel wherever it is offered; the join stream's POST is a read,
    # and its ?action= asks for runs:cancel inside the view (tests/apps/runs/test_run_cancel_scopes.py).
    ("POST", "/api/threads/<str:thread_id>/runs"): "runs:create",
    ("POST", "/api/threads/<str:thread_id>/runs/stream"): "runs:create",
    ("POST", "/api/threads/<str:thread_id>/runs/wait"): "runs:create",
    ("DELETE", "/api/threads/<str:thread_id>/runs/<str:run_id>"): "runs:cancel",
    ("POST", "/api/threads/<str:thread_id>/runs/<str:run_id>/cancel"): "runs:cancel",
    ("POST", "/api/threads/<str:thread_id>/runs/<str:run_id>/stream"): "runs:read",  # read by POST
    ("POST", "/api/runs"): "runs:create",
    ("POST", "/api/runs/stream"): "runs:create",
    ("POST", "/api/runs/wait"): "runs:create",
    ("POST", "/api/threads/<str:thread_id>/approvals"): "runs:create",  # the answer resumes the run
    # Scheduled tasks.
    ("POST", "/api/scheduled-tasks"): "runs:create",
    ("POST", "/api/scheduled-tasks/preview"): "runs:read",  # read by POST
    ("PATCH", "/api/scheduled-tasks/<str:task_id>"): "runs:create",
    ("DELETE", "/api/scheduled-tasks/<str:task_id>"): "runs:create",
    ("POST", "/api/scheduled-tasks/<str:task_id>/pause"): "runs:create",
    ("POST", "/api/scheduled-tasks/<str:task_id>/resume"): "runs:create",
    ("POST", "/api/scheduled-tasks/<str:task_id>/trigger"): "runs:create",
    # Assistants and agents.
    ("POST", "/api/assistants"): "threads:write",
    ("POST", "/api/assistants/search"): "threads:read",  # read by POST
    ("POST", "/api/assistants/count"): "threads:read",  # read by POST
    ("PATCH", "/api/assistants/<str:assistant_id>"): "threads:write",
    ("DELETE", "/api/assistants/<str:assistant_id>"): "threads:write",
    ("POST", "/api/assistants/<str:assistant_id>/versions"): "threads:read",  # read by POST
    ("POST", "/api/agents"): "threads:write",
    ("PUT", "/api/agents/<str:name>"): "threads:write",
    ("PATCH", "/api/agents/<str:name>"): "threads:write",
    ("DELETE", "/api/agents/<str:name>"): "threads:write",
    ("POST", "/api/agents/<str:name>/duplicate"): "threads:write",
    # Skills (the caller's own; everyone's are session-only, refused inside the views).
    ("POST", "/api/skills/install"): "threads:write",
    ("PUT", "/api/skills/<str:name>"): "threads:write",
    ("DELETE", "/api/skills/<str:name>"): "threads:write",
    ("POST", "/api/skills/<str:name>/rollback"): "threads:write",
    ("POST", "/api/skills/<str:name>/history/<int:revision_id>/restore"): "threads:write",
    # Memory.
    ("DELETE", "/api/memory"): "threads:write",
    ("POST", "/api/memory/import"): "threads:write",
    ("POST", "/api/memory/facts"): "threads:write",
    ("PATCH", "/api/memory/facts/<str:fact_id>"): "threads:write",
    ("DELETE", "/api/memory/facts/<str:fact_id>"): "threads:write",
    ("PATCH", "/api/memory/config"): "threads:write",
    # Knowledge bases (apps/knowledge): collections, their documents, a chat's attached ones.
    ("POST", "/api/knowledge/collections"): "knowledge:write",
    ("PATCH", "/api/knowledge/collections/<str:collection_id>"): "knowledge:write",
    ("DELETE", "/api/knowledge/collections/<str:collection_id>"): "knowledge:write",
    ("POST", "/api/knowledge/collections/<str:collection_id>/documents"): "knowledge:write",
    ("DELETE", "/api/knowledge/documents/<str:document_id>"): "knowledge:write",
    ("POST", "/api/knowledge/documents/<str:document_id>/retry"): "knowledge:write",
    ("PUT", "/api/threads/<str:thread_id>/knowledge"): "knowledge:write",
    # The caller's own approval rules.
    ("POST", "/api/approvals/rules"): "threads:write",
    ("DELETE", "/api/approvals/rules/<int:rule_id>"): "threads:write",
    # Staff operations (docs/accounts.md, "Staff operations"): a staff member's token with admin.
    ("POST", "/api/console/runs/<str:run_id>/cancel"): "admin",
    ("PUT", "/api/budgets/<str:target>"): "admin",
}

# (method, route) -> why any valid token may call it. A mutating route names its scope instead.
ANY_TOKEN: dict[tuple[str, str], str] = {}

# Patterns no request can reach, because an earlier pattern takes their path first.
UNREACHABLE = {
    ("/", "apps.console.views.landing"): "apps.chat.pages.home answers / (it renders the landing page itself for anonymous visitors)",
}

SAMPLE_VALUES = {"str": "x1", "int": "7", "slug": "x1", "uuid": str(uuid.UUID(int=7)), "path": "a/b.txt"}


@dataclass(frozen=True)
class Walked:
    route: str  # as written in the URL conf, as `manage.py auth_routes` prints it
    sample: str  # a concrete path the resolver sends to this pattern
    callback: object

    @property
    def view(self):
        return getattr(self.callback, "cls", None) or getattr(self.callback, "view_class", None) or self.callback

    @property
    def name(self) -> str:
        view = self.view
        return f"{view.__module__}.{getattr(view, '__qualname__', getattr(view, '__name__', repr(view)))}"

    @property
    def methods(self) -> tuple[str, ...]:
        """The mutating methods the view has. A function view could take any: all four."""
        actions = getattr(self.callback, "actions", None)
        if actions:
            return tuple(m.upper() for m in actions if m.upper() in MUTATING)
        view = getattr(self.callback, "cls", None) or getattr(self.callback, "view_class", None)
        if view is None:
            return MUTATING
        return tuple(m for m in MUTATING if m.lower() in view.http_method_names and hasattr(view, m.lower()))

    @property
    def token_scopes(self) -> dict | None:
        return view_token_scopes(self.callback)

    @property
    def staff_only(self) -> bool:
        cls = getattr(self.callback, "cls", None)
        return isinstance(cls, type) and issubclass(cls, APIView) and any(
            isinstance(p, type) and issubclass(p, IsAdminUser) for p in cls.permission_classes)


# --- the walk ------------------------------------------------------------------------------


def _regex_sample(regex: str) -> str:
    """The shortest-ish string a URL regex matches (each repeat once): enough for allauth's and
    Django admin's regex patterns. An unknown construct fails loudly rather than skip a route."""
    import re._constants as C
    import re._parser as P

    def one_of(items) -> str:
        negate = any(op is C.NEGATE for op, _ in items)
        if not negate:
            op, av = next((op, av) for op, av in items if op is not C.NEGATE)
            return {C.LITERAL: lambda: chr(av), C.RANGE: lambda: chr(av[0]), C.CATEGORY: lambda: category(av)}[op]()
        banned = {chr(av) for op, av in items if op is C.LITERAL}
        return next(c for c in "axz1" if c not in banned)

    def category(av) -> str:
        return {C.CATEGORY_DIGIT: "1", C.CATEGORY_WORD: "a", C.CATEGORY_NOT_SPACE: "a"}[av]

    def emit(tokens) -> str:
        out = []
        for op, av in tokens:
            if op is C.LITERAL:
                out.append(chr(av))
            elif op is C.NOT_LITERAL:
                out.append("b" if chr(av) == "a" else "a")
            elif op is C.ANY:
                out.append("x")
            elif op is C.IN:
                out.append(one_of(av))
            elif op is C.CATEGORY:
                out.append(category(av))
            elif op is C.BRANCH:
                out.append(emit(av[1][0]))
            elif op is C.SUBPATTERN:
                out.append(emit(av[-1]))
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
                low, _high, sub = av
                out.append(emit(sub) * max(low, 1))
            elif op is C.AT:
                continue
            else:
                raise AssertionError(f"no sample for {op} in the URL regex {regex!r}: teach _regex_sample")
        return "".join(out)

    return emit(P.parse(regex))


def _piece(pattern) -> tuple[str, str]:
    """(text as written, sample) for one pattern of the URL conf."""
    if isinstance(pattern, RoutePattern):
        text = str(pattern)
        return text, re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: SAMPLE_VALUES[m.group(1) or "str"], text)
    assert isinstance(pattern, RegexPattern), f"unknown URL pattern type {type(pattern)}"
    text = str(pattern).removeprefix("^")
    for anchor in ("\\Z", "$"):
        text = text.removesuffix(anchor)
    return text, _regex_sample(pattern.regex.pattern)


def _walk(patterns, text: str = "", sample: str = ""):
    for entry in patterns:
        piece_text, piece_sample = _piece(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, text + piece_text, sample + piece_sample)
        elif isinstance(entry, URLPattern):
            yield Walked("/" + text + piece_text, "/" + sample + piece_sample, entry.callback)


ALL_WALKED = [w for w in _walk(get_resolver().url_patterns) if w.methods]
# The /api/langgraph/ mount: the same patterns as /api/ (test_the_langgraph_routes_are_aliases).
ALIASES = [w for w in ALL_WALKED if w.route.startswith(LANGGRAPH_PREFIX)]
WALKED = [w for w in ALL_WALKED if not w.route.startswith(LANGGRAPH_PREFIX)]


def _reaches(walked: Walked) -> bool:
    found = resolve(walked.sample).func
    return (getattr(found, "cls", None) or getattr(found, "view_class", None) or found) is walked.view


def _expected_detail(walked: Walked, method: str) -> str:
    admitted, scope = required_scope(walked.token_scopes, method)
    if not admitted:
        return TOKEN_NOT_ALLOWED
    return lacks_scope_message(scope)


def _bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def _send(client: APIClient, method: str, path: str):
    if method == "DELETE":
        return client.delete(path)
    return getattr(client, method.lower())(path, {}, format="json")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(username="table-staff", email="staff@example.com", password="pw-staff-123",
                                                 is_staff=True, is_superuser=True)


@pytest.fixture
def one_scope_tokens(staff):
    """A staff member's tokens, one per scope, each holding that scope alone."""
    return {scope: _bearer(token_create(owner=staff, name=scope, scopes=[scope]).token) for scope in SCOPES}


# --- the tests -----------------------------------------------------------------------------


def test_the_walk_finds_the_routes():
    routes = {w.route for w in WALKED}
    assert len(WALKED) > 150  # the API, the pages, allauth, Django admin
    assert {"/api/threads", "/api/budgets/<str:target>", "/accounts/logout/", "/admin/login/"} <= routes
    unreachable = {(w.route, w.name) for w in WALKED if not _reaches(w)}
    assert unreachable == set(UNREACHABLE), "a pattern no path reaches: list it in UNREACHABLE with the reason, or fix the URL conf"


@pytest.mark.parametrize("walked", [pytest.param(w, id=w.route) for w in WALKED if _reaches(w)])
def test_a_token_holding_one_other_scope_is_refused(walked, one_scope_tokens):
    for method in walked.methods:
        admitted, declared = required_scope(walked.token_scopes, method)
        for scope, client in one_scope_tokens.items():
            if admitted and declared == scope:
                continue  # the scope the route asks for: let in, and tested by the route's own tests
            response = _send(client, method, walked.sample)
            where = f"{method} {walked.sample} with a token holding only {scope!r}"
            assert response.status_code == 403, f"{where}: {response.status_code} {getattr(response, 'content', b'')[:200]!r}"
            assert response.json() == {"detail": _expected_detail(walked, method)}, where


@pytest.mark.parametrize("walked", [pytest.param(w, id=w.route) for w in WALKED if w.staff_only])
def test_staff_routes_refuse_a_token_whose_owner_is_not_staff(walked, staff):
    """Minted with every scope (admin too) while the owner was staff; the owner is staff no more."""
    client = _bearer(token_create(owner=staff, name="every", scopes=list(SCOPES)).token)
    staff.is_staff = staff.is_superuser = False
    staff.save(update_fields=["is_staff", "is_superuser"])
    for method in walked.methods:
        response = _send(client, method, walked.sample)
        assert response.status_code == 403 and response.json()["detail"], f"{method} {walked.sample}"


def test_the_scopes_routes_declare_are_the_reviewed_ones():
    declared = {}
    for walked in WALKED:
        for method in walked.methods:
            admitted, scope = required_scope(walked.token_scopes, method)
            if admitted:
                declared[(method, walked.route)] = scope
    changed = {key: (TOKEN_ROUTES.get(key, "refuses tokens"), declared.get(key, "refuses tokens"))
               for key in declared.keys() | TOKEN_ROUTES.keys() if TOKEN_ROUTES.get(key) != declared.get(key)}
    assert not changed, (
        "routes whose token scope is not the reviewed one, as (listed in TOKEN_ROUTES, declared by the view); "
        f"change the view or, having reviewed it, TOKEN_ROUTES in tests/apps/accounts/test_scope_table.py: {changed}")


def test_no_mutating_route_takes_any_token_without_a_reason():
    any_token = {(method, w.route) for w in WALKED for method in w.methods if required_scope(w.token_scopes, method) == (True, ANY_SCOPE)}
    assert any_token <= set(ANY_TOKEN), (
        f"mutating routes that take any valid token: name the scope in token_scopes, or justify them in ANY_TOKEN: {sorted(any_token - set(ANY_TOKEN))}")
    assert all(reason.strip() for reason in ANY_TOKEN.values())


def test_the_langgraph_routes_are_aliases():
    """Every /api/langgraph/ route is its /api/ twin's own pattern (so the walk above covers it),
    and every LangGraph-compatible /api/ route has the alias."""
    twins = {w.route: w for w in WALKED}
    assert len(ALIASES) > 50
    for alias in ALIASES:
        twin = twins.get(canonical_path(alias.route))
        assert twin is not None, f"{alias.route} has no /api/ twin"
        assert alias.callback is twin.callback, alias.route
        assert alias.token_scopes == twin.token_scopes and alias.methods == twin.methods, alias.route
    aliased = {canonical_path(a.route) for a in ALIASES}
    for route in ("/api/threads", "/api/threads/search", "/api/threads/<str:thread_id>/state",
                  "/api/threads/<str:thread_id>/runs/stream", "/api/runs/wait", "/api/assistants/search"):
        assert route in aliased, route


@pytest.mark.parametrize("method, path, scope", [
    ("POST", "/api/langgraph/threads", "runs:read"),
    ("POST", "/api/langgraph/threads/x1/runs/stream", "threads:write"),
    ("POST", "/api/langgraph/threads/x1/state", "runs:create"),
    ("POST", "/api/langgraph/threads/x1/runs/x1/cancel", "runs:create"),
])
def test_an_alias_refuses_a_token_of_another_scope(method, path, scope, one_scope_tokens):
    walked = next(w for w in ALIASES if _reaches(w) and resolve(path).func is w.callback)
    response = _send(one_scope_tokens[scope], method, path)
    assert response.status_code == 403, response.content[:200]
    assert response.json() == {"detail": _expected_detail(walked, method)}
