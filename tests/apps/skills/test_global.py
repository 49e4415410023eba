"""Skills installed for everyone: admin-only install, rollback and delete; every user sees the
skill in the API; clash rules across public, global and user scopes; per-user enable state;
the audit trail; a refused global archive leaves nothing on disk."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from apps.accounts.models import PersonalAccessToken
from apps.accounts.services import token_create
from apps.skills.models import GlobalSkillChange, SkillState
from harness.config import thread_user_data_dir
from harness.skills.loader import custom_root, global_root, global_skills_home
from tests.support import skill_archives as sa

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_user(username="root", email="root@example.com", password="pw-root-123", is_staff=True)


@pytest.fixture
def admin_client(admin):
    client = APIClient()
    client.force_authenticate(admin)
    return client


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(client, data: bytes, scope: str | None = "global", name: str = "x.skill"):
    body = {"file": SimpleUploadedFile(name, data)}
    if scope is not None:
        body["scope"] = scope
    return client.post("/api/skills/install", body, format="multipart")


def names(client):
    return {s["name"]: s for s in client.get("/api/skills").json()["skills"]}


def test_admin_installs_for_everyone_and_every_user_sees_it(admin_client, user_client, other_user, public_skills):
    response = upload(admin_client, sa.good("team-way", version="1.0"))
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["skill_name"], body["scope"], body["replaced"]) == ("team-way", "global", False)
    assert body["message"] == "Skill 'team-way' installed for everyone."
    assert (global_root() / "team-way" / "scripts" / "run.py").is_file()
    for client in (user_client, client_for(other_user), admin_client):
        skill = names(client)["team-way"]
        assert skill["category"] == "global" and skill["enabled"] is True
        assert skill["container_path"] == "/mnt/skills/global/team-way"
    # only admins may change it
    assert names(user_client)["team-way"]["editable"] is False
    assert names(admin_client)["team-way"]["editable"] is True
    assert user_client.get("/api/skills/team-way").json()["versions"] == []


def test_non_admin_asking_for_global_is_403_with_detail_and_writes_nothing(user_client, public_skills):
    response = upload(user_client, sa.good("team-way"))
    assert response.status_code == 403
    assert "only an admin" in response.json()["detail"]
    assert not global_skills_home().exists() or list(global_skills_home().rglob("*")) == []
    assert GlobalSkillChange.objects.count() == 0


def test_an_admin_token_cannot_install_for_everyone(admin, public_skills):
    issued = token_create(owner=admin, name="script", scopes=list(PersonalAccessToken.Scope.values))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.token}")
    response = upload(client, sa.good("team-way"))
    assert response.status_code == 403 and "personal access tokens" in response.json()["detail"]
    # the same token still installs for its owner
    assert upload(client, sa.good("mine"), scope=None).status_code == 200
    assert not (global_root() / "team-way").exists()


def test_unknown_scope_is_refused(admin_client, public_skills):
    response = upload(admin_client, sa.good("team-way"), scope="planet")
    assert response.status_code == 422 and "scope must be" in response.json()["detail"]


def test_global_install_from_a_thread_file(admin, admin_client, user_client, public_skills):
    thread_id = admin_client.post("/api/threads", {}, format="json").json()["thread_id"]
    outputs = thread_user_data_dir(admin.pk, thread_id) / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / "made.skill").write_bytes(sa.good("made-for-all"))
    body = {"thread_id": thread_id, "path": "/mnt/user-data/outputs/made.skill", "scope": "global"}
    response = admin_client.post("/api/skills/install", body, format="json")
    assert response.status_code == 200, response.content
    assert names(user_client)["made-for-all"]["category"] == "global"


def test_name_clashes_across_scopes(admin_client, user, user_client, public_skills):
    # a global skill cannot take a public name
    clash = upload(admin_client, sa.good("alpha"))
    assert clash.status_code == 422 and [f["rule"] for f in clash.json()["findings"]] == ["name.clash_public"]

    # a user's skill that was there first stays theirs, and the admin is told
    assert upload(user_client, sa.good("report", version="mine"), scope=None).status_code == 200
    response = upload(admin_client, sa.good("report", version="team"))
    assert response.status_code == 200
    shadow = [f for f in response.json()["findings"] if f["rule"] == "name.shadowed"]
    assert shadow and shadow[0]["severity"] == "warning" and "1 user(s)" in shadow[0]["message"]
    mine = names(user_client)["report"]
    assert (mine["category"], mine["version"]) == ("custom", "mine")
    # ...and they may keep updating their own
    assert upload(user_client, sa.good("report", version="mine-2"), scope=None).status_code == 200
    assert names(user_client)["report"]["version"] == "mine-2"

    # but a new user skill under a global name is refused, with nothing left on disk
    upload(admin_client, sa.good("team-way"))
    refused = upload(user_client, sa.good("team-way"), scope=None)
    assert refused.status_code == 422
    assert [f["rule"] for f in refused.json()["findings"]] == ["name.clash_global"]
    assert not (custom_root(str(user.pk)) / "team-way").exists()


def test_enable_state_of_a_global_skill_is_per_user(admin_client, user_client, other_user, public_skills):
    upload(admin_client, sa.good("team-way"))
    assert user_client.put("/api/skills/team-way", {"enabled": False}, format="json").json()["enabled"] is False
    assert names(user_client)["team-way"]["enabled"] is False
    assert names(client_for(other_user))["team-way"]["enabled"] is True
    # the operator's default for everyone (a SkillState row without owner) applies to global skills too
    SkillState.objects.create(owner=None, name="team-way", enabled=False)
    assert names(client_for(other_user))["team-way"]["enabled"] is False


def test_reinstall_rollback_and_delete_for_everyone(admin, admin_client, user_client, other_user, public_skills):
    upload(admin_client, sa.good("team-way", version="1.0"))
    assert upload(admin_client, sa.good("team-way", version="2.0")).json()["replaced"] is True
    assert names(user_client)["team-way"]["version"] == "2.0"
    versions = admin_client.get("/api/skills/team-way/versions").json()["versions"]
    assert [v["version"] for v in versions] == ["1.0"]

    assert user_client.post("/api/skills/team-way/rollback", {}, format="json").status_code == 403
    rolled = admin_client.post("/api/skills/team-way/rollback", {}, format="json")
    assert rolled.status_code == 200 and rolled.json()["version"] == "1.0"
    assert names(user_client)["team-way"]["version"] == "1.0"
    assert [v["version"] for v in admin_client.get("/api/skills/team-way/versions").json()["versions"]] == ["2.0"]

    user_client.put("/api/skills/team-way", {"enabled": False}, format="json")
    denied = user_client.delete("/api/skills/team-way")
    assert denied.status_code == 403 and "only an admin" in denied.json()["detail"]
    assert admin_client.delete("/api/skills/team-way").status_code == 204
    assert "team-way" not in names(user_client) and not (global_root() / "team-way").exists()
    assert not (global_skills_home() / ".versions" / "team-way").exists()
    assert not SkillState.objects.filter(name="team-way").exists()
    # a later install starts on again for the user who had turned the old one off
    upload(admin_client, sa.good("team-way", version="3.0"))
    assert names(user_client)["team-way"]["enabled"] is True

    actions = list(GlobalSkillChange.objects.order_by("id").values_list("action", "version", "actor"))
    assert actions == [("install", "1.0", admin.pk), ("update", "2.0", admin.pk), ("rollback", "1.0", admin.pk),
                       ("delete", "", admin.pk), ("install", "3.0", admin.pk)]


def test_admin_reaches_the_global_skill_behind_their_own(admin, admin_client, public_skills):
    upload(admin_client, sa.good("team-way", version="1.0"), scope=None)  # the admin's own
    upload(admin_client, sa.good("team-way", version="g1"))
    upload(admin_client, sa.good("team-way", version="g2"))
    assert names(admin_client)["team-way"]["category"] == "custom"
    rolled = admin_client.post("/api/skills/team-way/rollback", {"scope": "global"}, format="json")
    assert rolled.status_code == 200 and rolled.json()["version"] == "g1"
    assert admin_client.delete("/api/skills/team-way?scope=global").status_code == 204
    assert not (global_root() / "team-way").exists()
    assert names(admin_client)["team-way"]["version"] == "1.0"  # their own is untouched
    assert admin_client.delete("/api/skills/team-way?scope=global").status_code == 404


@pytest.mark.parametrize("attack", ["traversal", "symlink", "bomb"])
def test_a_refused_global_archive_leaves_nothing(attack, admin_client, public_skills):
    make, rule = sa.ATTACKS[attack]
    response = upload(admin_client, make())
    assert response.status_code == 422 and rule in {f["rule"] for f in response.json()["findings"]}
    home = global_skills_home()
    leftovers = [p for p in home.rglob("*") if p != global_root()] if home.exists() else []
    assert leftovers == []
    assert GlobalSkillChange.objects.count() == 0
