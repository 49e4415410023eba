"""The ASGI handler Daphne serves: Django's request cycle entered once, still whole.

``SyncChainASGIHandler`` runs the middleware chain as sync code in one hop; these tests go
through the real ASGI interface and check that everything the chain does for users still
happens: token auth, CSRF, security headers, JSON errors and streamed bodies.
"""

import httpx
import pytest
from asgiref.sync import async_to_sync

from apps.accounts.services import token_create
from deerflow_site.handlers import SyncChainASGIHandler

pytestmark = pytest.mark.django_db(transaction=True)


def _application():
    # Imported here: importing the ASGI module runs startup recovery, which needs the database.
    from deerflow_site.asgi import application

    return application


def _request(method: str, path: str, **kwargs) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_application()), base_url="http://testserver") as client:
            return await client.request(method, path, **kwargs)

    return async_to_sync(go)()


def test_daphne_serves_the_sync_chain_handler():
    assert isinstance(_application().application_mapping["http"], SyncChainASGIHandler)


def test_bearer_request_passes_the_middleware_chain(user):
    token = token_create(owner=user, name="script", scopes=["threads:read"]).token
    response = _request("GET", "/api/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response.json()["username"] == "alice"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_bad_token_is_a_json_401():
    response = _request("GET", "/api/me", headers={"Authorization": "Bearer dfp_" + "x" * 43})
    assert response.status_code == 401
    assert "detail" in response.json()


def test_session_post_without_csrf_is_refused(user):
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_application()), base_url="http://testserver") as client:
            login = await client.get("/accounts/login/")
            assert login.status_code == 200
            # A cookie but no CSRF token: the sign-in is refused before it is tried.
            client.cookies.set("sessionid", "not-a-session")
            return await client.post("/accounts/login/", data={"login": "alice", "password": "pw-alice-123"})

    response = async_to_sync(go)()
    assert response.status_code == 403


def test_unknown_route_is_a_404_page():
    assert _request("GET", "/no/such/page").status_code == 404
