"""The chat page's modules served as one script and one stylesheet (apps/chat/bundles.py): what
the page asks for, what it gets, and a changed file reaching the next page where static files
are re-read."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from apps.chat import bundles

pytestmark = pytest.mark.django_db

STATIC = Path(settings.BASE_DIR) / "static"


def bundle_urls(client) -> dict[str, str]:
    html = client.get("/").content.decode()
    return {kind: url for url, kind in re.findall(r'"(/bundles/chat\.[0-9a-f]+\.(js|css))"', html)}


def test_the_chat_page_loads_one_script_and_one_stylesheet_of_its_modules(client, user):
    client.force_login(user)
    html = client.get("/").content.decode()
    urls = bundle_urls(client)
    assert set(urls) == {"js", "css"}
    # None of the joined modules is asked for on its own as well.
    for name in (*bundles.SCRIPTS, *bundles.STYLES):
        assert f"/static/{name}" not in html, name
    # The theme sheets stay apart: the theme switch turns them on and off.
    assert 'data-theme-sheet="dark"' in html


@pytest.mark.parametrize("kind", ["js", "css"])
def test_a_bundle_holds_every_module_in_page_order_and_is_kept_for_good(client, user, kind):
    client.force_login(user)
    url = bundle_urls(client)[kind]
    client.logout()  # public, as the static files it joins are
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == bundles.KINDS[kind][0]
    assert "immutable" in response["Cache-Control"] and "max-age=31536000" in response["Cache-Control"]
    body = response.content
    names = bundles.SCRIPTS if kind == "js" else bundles.STYLES
    positions = [body.index(f"/* {name} */\n".encode()) for name in names]
    assert positions == sorted(positions)
    for name in names:
        text = (STATIC / name).read_bytes()
        kept = b"\n".join(line for line in text.splitlines() if not line.lstrip().startswith(b"//# sourceMappingURL="))
        assert kept in body, name
    assert b"sourceMappingURL" not in body


def test_an_older_digest_gets_the_current_content_not_to_be_kept(client, user):
    client.force_login(user)
    url = bundle_urls(client)["js"]
    stale = re.sub(r"chat\.[0-9a-f]+\.js", "chat.0123456789abcdef.js", url)
    response = client.get(stale)
    assert response.status_code == 200 and response["Cache-Control"] == "no-cache"
    assert response.content == client.get(url).content


@pytest.mark.parametrize("path", ["/bundles/chat.js", "/bundles/other.0123.js", "/bundles/chat.0123.html", "/bundles/chat.XYZ.css"])
def test_an_unknown_bundle_is_not_found(client, path):
    assert client.get(path).status_code == 404


def test_a_changed_module_reaches_the_next_page_where_static_files_are_re_read(client, user, tmp_path):
    shutil.copytree(STATIC, tmp_path / "static")
    module = tmp_path / "static" / "chat" / "app.js"
    client.force_login(user)
    with override_settings(STATICFILES_DIRS=[tmp_path / "static"], WHITENOISE_AUTOREFRESH=True):
        before = bundle_urls(client)["js"]
        module.write_text(module.read_text() + "\n/* a change in development */\n")
        after = bundle_urls(client)["js"]
        assert after != before
        assert b"a change in development" in client.get(after).content
    with override_settings(STATICFILES_DIRS=[tmp_path / "static"], WHITENOISE_AUTOREFRESH=False):
        kept = bundle_urls(client)["js"]
        module.write_text(module.read_text() + "\n/* another change */\n")
        # Built once per process where static files are not re-read, as WhiteNoise serves them.
        assert bundle_urls(client)["js"] == kept
