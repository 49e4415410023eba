"""Ownership on every API route: user B never reaches user A's objects.

Every (method, route) under /api/ in the URL conf must be listed here: in OWNED_ROUTES, which
walks it with two users, or in NO_USER_OBJECTS, for routes that hold nothing per user.
test_every_api_route_is_listed fails when a route is in neither, so new routes must join.

Adding a route is one line. The path is written exactly as ``manage.py auth_routes`` prints it;
``setup`` creates user A's object and returns the path's values (and a marker: text of A's that
must not appear in B's answer on list-like routes). Per entry the test:
  1. calls the route as B (session, and a token with every scope where the route takes tokens):
     404 when the path names A's object, else a success that does not contain A's marker;
  2. then calls it as A and expects ``owner_status`` (and A's marker on list-like routes), so a
     route that answers 404 to everyone cannot pass.
A superuser gets the same 404 as B on routes that name A's object: admins use Django admin.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import time

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from apps.accounts.routes import path_for, route_table
from apps.accounts.services import token_create
from apps.runs.models import Run
from apps.threads.selectors import thread_get_for_user
from apps.threads.services import thread_create, thread_tags_set
from deerflow_site.api_urls import LANGGRAPH_PREFIX, canonical_path
from tests.apps.accounts.conftest import ALL_SCOPES
from tests.support.waiting import HANG_SECONDS

# Runs execute on the runtime's own loop and connections, so rows must be committed.
pytestmark = [pytest.mark.django_db(transaction=True)]


@dataclass(frozen=True)
class Owned:
    kwargs: dict = field(default_factory=dict)  # values for the route's <converters>
    marker: str | None = None  # appears in A's answer, must not appear in B's


@dataclass(frozen=True)
class OwnedRoute:
    method: str
    path: str
    setup: Callable[..., Owned]
    body: dict | Callable[[Owned], dict] | None = None
    owner_status: int = 200
    # What B gets: 404 where the path or body names A's object (the default), else a success.
    other_status: int | None = None
    # List-like routes: A's answer shows the marker, B's does not. Default: GET without a path object.
    lists: bool | None = None
    # A known defect, named: the entry runs as a strict xfail, so the fix turns it red until
    # this is cleared.
    known_bug: str = ""

    @property
    def names_an_object(self) -> bool:
        return "<" in self.path or callable(self.body)

    @property
    def is_list(self) -> bool:
        return self.lists if self.lists is not None else (self.method == "GET" and "<" not in self.path)


# --- setups: each creates user A's object ------------------------------------------------------


def owned_token(user) -> Owned:
    issued = token_create(owner=user, name=f"token-of-{user.username}-{uuid.uuid4().hex[:6]}", scopes=["runs:read"])
    return Owned(kwargs={"token_id": issued.record.pk}, marker=issued.record.name)


def owned_connection(user) -> Owned:
    from apps.channels.models import ChannelConnection

    name = f"conn-of-{user.username}-{uuid.uuid4().hex[:6]}"
    connection = ChannelConnection.objects.create(user=user, provider="telegram", external_id=name, display_name=name)
    return Owned(kwargs={"connection_id": connection.pk}, marker=name)


def owned_identity(user) -> Owned:
    return Owned(marker=user.email)


def owned_thread(user) -> Owned:
    thread = thread_create(owner=user, thread_id=f"t-{user.username}-{uuid.uuid4().hex[:8]}")
    return Owned(kwargs={"thread_id": thread.pk}, marker=thread.pk)


def owned_tag(user) -> Owned:
    """A tag of A's on one of A's threads."""
    thread = owned_thread(user)
    name = f"tag-of-{user.username}-{uuid.uuid4().hex[:6]}"
    tag = thread_tags_set(thread=thread_get_for_user(user=user, thread_id=thread.kwargs["thread_id"]), names=[name])[0]
    return Owned(kwargs={**thread.kwargs, "tag_id": tag.pk}, marker=name)


def owned_share(user) -> Owned:
    """A shared link of A's to one of A's chats."""
    from apps.shares.services import share_create

    thread = owned_run(user)  # a chat with messages: an empty one has nothing to share
    share = share_create(owner=user, thread=thread_get_for_user(user=user, thread_id=thread.kwargs["thread_id"]))
    return Owned(kwargs={**thread.kwargs, "share_id": str(share.pk)}, marker=str(share.pk))


def owned_versions(user) -> Owned:
    """A chat whose answer was regenerated: two versions of one turn, the first one's run id."""
    owned = owned_run(user)
    client = APIClient()
    client.force_login(user)
    response = client.post(path_for("/api/threads/<str:thread_id>/runs/regenerate", **owned.kwargs), {}, format="json")
    assert response.status_code == 201, response.content
    _drain(response)
    _wait_until_idle()
    return owned


def owned_run(user) -> Owned:
    """A thread with a finished run (so it has state, history and a checkpoint), made the way a
    user makes one: through the API, as the owner, with the scripted test agent."""
    thread = owned_thread(user)
    client = APIClient()
    client.force_login(user)
    response = client.post(path_for("/api/threads/<str:thread_id>/runs/wait", **thread.kwargs), {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}, format="json")
    assert response.status_code == 200
    _drain(response)
    run = Run.objects.filter(thread_id=thread.kwargs["thread_id"]).latest("created_at")
    _wait_until_idle()
    checkpoint_id = client.get(path_for("/api/threads/<str:thread_id>/state", **thread.kwargs)).json()["checkpoint_id"]
    return Owned(kwargs={**thread.kwargs, "run_id": str(run.pk), "checkpoint_id": checkpoint_id}, marker=thread.marker)


def owned_answer(user) -> Owned:
    """``owned_run`` plus the ids of its user message and answer (DeerFlow's prepare routes name them)."""
    owned = owned_run(user)
    client = APIClient()
    client.force_login(user)
    messages = client.get(path_for("/api/threads/<str:thread_id>/state", **owned.kwargs)).json()["values"]["messages"]
    ids = {"ai_id": next(m["id"] for m in reversed(messages) if m["type"] == "ai"),
           "human_id": next(m["id"] for m in reversed(messages) if m["type"] == "human")}
    return Owned(kwargs={**owned.kwargs, **ids}, marker=owned.marker)


def owned_feedback(user) -> Owned:
    """A finished run whose answer the owner rated."""
    from apps.threads.models import Feedback

    owned = owned_run(user)
    run = Run.objects.get(pk=owned.kwargs["run_id"])
    Feedback.objects.create(thread_id=run.thread_id, run=run, owner=user, rating=-1, comment="walk")
    return owned


def owned_scheduled_task(user) -> Owned:
    from apps.schedules.services import scheduled_task_create

    thread = owned_thread(user)
    task = scheduled_task_create(user=user, data={"title": f"task-of-{user.username}-{uuid.uuid4().hex[:6]}", "prompt": "hi", "cron": "0 7 * * *",
                                                  "context_mode": "reuse_thread", "thread_id": thread.kwargs["thread_id"]})
    return Owned(kwargs={"task_id": task.pk, **thread.kwargs}, marker=task.title)


def owned_files(user) -> Owned:
    """A thread with an uploaded file, an output file and a finished run that presented it."""
    import hashlib

    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.runs.journal import JournalEvent, journal_append
    from apps.threads.uploads import IncomingFile, upload_files
    from harness.config import thread_user_data_dir

    thread = thread_create(owner=user, thread_id=f"t-{user.username}-{uuid.uuid4().hex[:8]}")
    name = f"upload-{uuid.uuid4().hex[:8]}.txt"
    upload_files(thread=thread, files=[IncomingFile(name, SimpleUploadedFile(name, b"owned"))])
    output = thread_user_data_dir(user.pk, thread.pk) / "outputs" / "owned.md"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("owned")
    run = Run.objects.create(thread=thread, owner=user, status=Run.Status.SUCCESS)
    journal_append(thread_id=thread.pk, run_id=str(run.pk), events=[
        JournalEvent("llm.ai.response", "message", {"type": "ai", "tool_calls": [{"name": "present_files", "id": "c1", "args": {"filepaths": ["/mnt/user-data/outputs/owned.md"]}}]}, {}),
        JournalEvent("llm.tool.result", "message", {"type": "tool", "name": "present_files", "tool_call_id": "c1", "content": "Presented to the user: /mnt/user-data/outputs/owned.md"}, {}),
    ])
    return Owned(kwargs={"thread_id": thread.pk, "filename": name, "artifact_path": "mnt/user-data/outputs/owned.md", "run_id": str(run.pk),
                         "sha": hashlib.sha256(b"owned").hexdigest()}, marker=name)


def owned_skill(user) -> Owned:
    """A custom skill of A's, with an earlier version to roll back to."""
    from harness.skills import loader

    name = f"owned-{uuid.uuid4().hex[:8]}"
    md = f"---\nname: {name}\ndescription: A's skill.\n---\nSteps.\n"
    live = loader.custom_root(str(user.pk)) / name
    earlier = loader.user_skills_home(str(user.pk)) / ".versions" / name / "00000000000000000001"
    for folder in (live, earlier):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(md)
    loader.clear_cache()
    return Owned(kwargs={"name": name}, marker=name)


def owned_skill_revision(user) -> Owned:
    """A custom skill of A's that the agent patched: one history row to restore."""
    from apps.skills.models import SkillRevision

    owned = owned_skill(user)
    name = owned.kwargs["name"]
    md = f"---\nname: {name}\ndescription: A's skill.\n---\nSteps.\n"
    row = SkillRevision.objects.create(owner=user, name=name, action="patch", prev_content=md, new_content=md + "More.\n")
    return Owned(kwargs={"name": name, "revision_id": row.pk}, marker=name)


def owned_kb_collection(user) -> Owned:
    """A knowledge collection of A's (private)."""
    from apps.knowledge.services import collection_create

    collection = collection_create(user=user, name=f"kb-of-{user.username}-{uuid.uuid4().hex[:6]}")
    return Owned(kwargs={"collection_id": str(collection.pk)}, marker=collection.name)


def owned_kb_document(user) -> Owned:
    """A document of A's, read and indexed: its passage holds a word nobody else has."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.knowledge import queue, selectors
    from apps.knowledge.services import IncomingFile, document_add_uploads

    collection = owned_kb_collection(user)
    word = f"zebra{uuid.uuid4().hex[:8]}"
    upload = SimpleUploadedFile(f"{word}.md", f"# Notes\n\nThe word {word} is in this passage.\n".encode())
    [document] = document_add_uploads(user=user, collection_id=collection.kwargs["collection_id"],
                                      files=[IncomingFile(name=upload.name, file=upload)])
    assert queue.drain(timeout=HANG_SECONDS)
    passage = selectors.passages_of(selectors.document_get_readable(user=user, document_id=str(document.pk)))[0]
    return Owned(kwargs={**collection.kwargs, "document_id": str(document.pk), "citation_id": passage.citation_id}, marker=word)


def owned_kb_thread_file(user) -> Owned:
    """A's collection and a file in the outputs of A's chat, to add from there."""
    from harness.config import thread_user_data_dir

    collection = owned_kb_collection(user)
    thread = owned_thread(user)
    outputs = thread_user_data_dir(user.pk, thread.kwargs["thread_id"]) / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / "notes.md").write_text("# Notes\n\nA's notes.\n")
    return Owned(kwargs={**collection.kwargs, **thread.kwargs}, marker=collection.marker)


def owned_kb_attached(user) -> Owned:
    """One of A's chats with A's collection attached."""
    from apps.knowledge.services import thread_collections_set

    collection = owned_kb_collection(user)
    thread = owned_thread(user)
    thread_collections_set(user=user, thread_id=thread.kwargs["thread_id"], collection_ids=[collection.kwargs["collection_id"]])
    return Owned(kwargs={**collection.kwargs, **thread.kwargs}, marker=collection.marker)


def owned_skill_archive(user) -> Owned:
    """A .skill archive in the outputs of A's thread."""
    from harness.config import thread_user_data_dir
    from tests.support.skill_archives import good

    thread = owned_thread(user)
    outputs = thread_user_data_dir(user.pk, thread.kwargs["thread_id"]) / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / "mine.skill").write_bytes(good(f"arch-{uuid.uuid4().hex[:8]}"))
    return Owned(kwargs=thread.kwargs, marker=thread.marker)
def owned_memory(user) -> Owned:
    from apps.memory.services import fact_create

    marker = f"fact-of-{user.username}-{uuid.uuid4().hex[:6]}"
    doc = fact_create(user=user, content=marker)
    return Owned(kwargs={"fact_id": doc.facts[0].id}, marker=marker)


def owned_approval_rule(user) -> Owned:
    from apps.governance.models import ApprovalRule

    rule = ApprovalRule.objects.create(owner=user, name=f"rule-of-{user.username}-{uuid.uuid4().hex[:6]}", tool="bash", action="ask")
    return Owned(kwargs={"rule_id": rule.pk}, marker=rule.name)


def owned_decision(user) -> Owned:
    from apps.governance.models import ApprovalDecision

    thread = owned_thread(user)
    d = ApprovalDecision.objects.create(user=user, thread_id=thread.kwargs["thread_id"], tool="bash", args_digest="0" * 64,
                                        rule_name=f"decided-{user.username}-{uuid.uuid4().hex[:6]}", rule_source="config",
                                        decision="approved", decided_by=str(user.pk))
    return Owned(kwargs=thread.kwargs, marker=d.rule_name)
def owned_agent(user) -> Owned:
    """A custom agent of A's (not shared), by name and by assistant id."""
    from apps.agents.services import agent_create

    agent = agent_create(owner=user, data={"name": f"agent-{user.username}-{uuid.uuid4().hex[:6]}", "soul": "A's persona"})
    return Owned(kwargs={"name": agent.name, "assistant_id": str(agent.pk)}, marker=agent.name)


def _fresh_agent(owned: Owned) -> dict:
    return {"name": f"walk-{uuid.uuid4().hex[:8]}"}


def _fresh_assistant(owned: Owned) -> dict:
    return {"graph_id": "lead_agent", "name": f"walk-{uuid.uuid4().hex[:8]}"}


def _run_on(owned: Owned) -> dict:
    return {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}


def _stateless_run_on(owned: Owned) -> dict:
    return {**_run_on(owned), "config": {"configurable": {"thread_id": owned.kwargs["thread_id"]}}}


# --- the table -------------------------------------------------------------------------------

OWNED_ROUTES = [
    OwnedRoute("GET", "/api/me", owned_identity),
    OwnedRoute("GET", "/api/v1/auth/me", owned_identity),
    OwnedRoute("GET", "/api/tokens/", owned_token),
    OwnedRoute("POST", "/api/tokens/", owned_token, body={"name": "fresh", "scopes": ["runs:read"]}, owner_status=201, lists=False),
    OwnedRoute("DELETE", "/api/tokens/<int:token_id>/", owned_token, owner_status=204),
    # Threads. Thread ids are global: B cannot take A's id, and the create answers 404 like every route.
    OwnedRoute("POST", "/api/threads", owned_thread, body=lambda o: {"thread_id": o.kwargs["thread_id"]}, lists=False),
    OwnedRoute("POST", "/api/threads/search", owned_thread, body={}, lists=True),
    OwnedRoute("GET", "/api/threads/<str:thread_id>", owned_thread),
    OwnedRoute("PATCH", "/api/threads/<str:thread_id>", owned_thread, body={"metadata": {"k": "v"}}),
    OwnedRoute("DELETE", "/api/threads/<str:thread_id>", owned_thread, owner_status=204),
    OwnedRoute("PUT", "/api/threads/<str:thread_id>/pin", owned_thread),
    OwnedRoute("DELETE", "/api/threads/<str:thread_id>/pin", owned_thread),
    # Shared links and answer versions.
    OwnedRoute("POST", "/api/threads/<str:thread_id>/shares", owned_run, body={}, owner_status=201),
    OwnedRoute("GET", "/api/shares", owned_share),
    OwnedRoute("DELETE", "/api/shares/<str:share_id>", owned_share, owner_status=204),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/versions", owned_run),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/versions", owned_versions, body=lambda o: {"run_id": o.kwargs["run_id"]}),
    # Chat tags: B's list never shows A's tag, B's tag of the same name is B's own.
    OwnedRoute("GET", "/api/tags", owned_tag),
    OwnedRoute("POST", "/api/tags", owned_tag, body={"name": "fresh"}, owner_status=201, lists=False),
    OwnedRoute("PATCH", "/api/tags/<int:tag_id>", owned_tag, body={"name": "renamed"}),
    OwnedRoute("DELETE", "/api/tags/<int:tag_id>", owned_tag, owner_status=204),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/tags", owned_tag),
    OwnedRoute("PUT", "/api/threads/<str:thread_id>/tags", owned_tag, body={"tags": ["mine"]}),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/state", owned_run),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/state", owned_run, body={"values": {"title": "renamed"}}),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/state/checkpoint", owned_run, body=lambda o: {"checkpoint": {"checkpoint_id": o.kwargs["checkpoint_id"]}}),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/state/<str:checkpoint_id>", owned_run),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/history", owned_run),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/history", owned_run, body={"limit": 5}),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/messages/page", owned_run),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/token-usage", owned_run),
    # Runs on a thread, and stateless runs aimed at A's thread.
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs", owned_run),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs", owned_run, body=_run_on),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/stream", owned_run, body=_run_on),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/wait", owned_run, body=_run_on),
    OwnedRoute("POST", "/api/runs", owned_run, body=_stateless_run_on, lists=False),
    OwnedRoute("POST", "/api/runs/stream", owned_run, body=_stateless_run_on, lists=False),
    OwnedRoute("POST", "/api/runs/wait", owned_run, body=_stateless_run_on, lists=False),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>", owned_run),
    OwnedRoute("DELETE", "/api/threads/<str:thread_id>/runs/<str:run_id>", owned_run, owner_status=204),
    # The owner's run has finished, so the owner's cancel is a 409 (found, not cancellable).
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/<str:run_id>/cancel", owned_run, owner_status=409),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>/join", owned_run),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>/stream", owned_run),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/<str:run_id>/stream", owned_run),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>/events", owned_run),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>/workspace-changes", owned_run),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>/feedback", owned_feedback),
    OwnedRoute("PUT", "/api/threads/<str:thread_id>/runs/<str:run_id>/feedback", owned_run, body={"rating": 1}),
    OwnedRoute("DELETE", "/api/threads/<str:thread_id>/runs/<str:run_id>/feedback", owned_feedback),
    # Console: each user's own numbers; the thread id marks A's rows.
    OwnedRoute("GET", "/api/console/stats", owned_run, lists=False),
    OwnedRoute("GET", "/api/console/runs", owned_run),
    OwnedRoute("GET", "/api/console/runs/export", owned_run),
    OwnedRoute("GET", "/api/console/usage", owned_run),
    OwnedRoute("GET", "/api/console/usage/export", owned_run, lists=False),
    OwnedRoute("GET", "/api/console/feedback", owned_feedback),
    OwnedRoute("GET", "/api/console/feedback/export", owned_feedback),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>/messages", owned_run),
    # Thread actions (docs/thread-actions.md).
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/regenerate", owned_run, body={}, owner_status=201),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/edit-regenerate", owned_run, body={"content": "edited"}, owner_status=201),
    # DeerFlow's prepare steps (change nothing; the body names A's messages).
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/regenerate/prepare", owned_answer,
               body=lambda o: {"message_id": o.kwargs["ai_id"]}),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/runs/edit-regenerate/prepare", owned_answer,
               body=lambda o: {"human_message_id": o.kwargs["human_id"], "replacement_text": "edited"}),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/branches", owned_run, body=lambda o: {"run_id": o.kwargs["run_id"]}, owner_status=201),
    # One turn fits in the kept window: the owner's compaction is a 409 (found, nothing to compact).
    OwnedRoute("POST", "/api/threads/<str:thread_id>/compact", owned_run, owner_status=409),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/context", owned_run),
    OwnedRoute("POST", "/api/threads/<str:thread_id>/suggestions", owned_run, body={}),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/goal", owned_run),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/export", owned_run),
    # The thread id only labels the trace and is ignored when not the caller's (DeerFlow sends ids of
    # chats not created yet): both get the walk's model-less 503, so B learns nothing of A's id.
    OwnedRoute("POST", "/api/input-polish", owned_thread, body=lambda o: {"text": "hi", "thread_id": o.kwargs["thread_id"]},
               owner_status=503, other_status=503),
    # The walk's test agent has no goal channel: the owner's write is a 422 naming that (found, not writable).
    OwnedRoute("PUT", "/api/threads/<str:thread_id>/goal", owned_run, body={"objective": "finish"}, owner_status=422),
    OwnedRoute("DELETE", "/api/threads/<str:thread_id>/goal", owned_run, owner_status=422),
    # Uploads and artifacts. The walk sends JSON, so the owner's upload is a 415 (found, wrong body).
    OwnedRoute("POST", "/api/threads/<str:thread_id>/uploads", owned_files, body={}, owner_status=415),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/uploads/limits", owned_files),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/uploads/list", owned_files),
    OwnedRoute("DELETE", "/api/threads/<str:thread_id>/uploads/<str:filename>", owned_files),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/artifacts/<path:artifact_path>", owned_files),
    OwnedRoute("PUT", "/api/threads/<str:thread_id>/artifacts/<path:artifact_path>", owned_files, body=lambda o: {"content": "edited", "expected_sha256": o.kwargs["sha"]}),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/runs/<str:run_id>/artifacts/archive", owned_files),
    # Scheduled tasks.
    OwnedRoute("GET", "/api/scheduled-tasks", owned_scheduled_task),
    OwnedRoute("POST", "/api/scheduled-tasks", owned_scheduled_task, body={"title": "fresh", "prompt": "hi", "cron": "0 7 * * *"}, owner_status=201, lists=False),
    OwnedRoute("GET", "/api/scheduled-tasks/<str:task_id>", owned_scheduled_task),
    OwnedRoute("PATCH", "/api/scheduled-tasks/<str:task_id>", owned_scheduled_task, body={"title": "renamed"}),
    OwnedRoute("DELETE", "/api/scheduled-tasks/<str:task_id>", owned_scheduled_task),
    OwnedRoute("POST", "/api/scheduled-tasks/<str:task_id>/pause", owned_scheduled_task),
    OwnedRoute("POST", "/api/scheduled-tasks/<str:task_id>/resume", owned_scheduled_task),
    OwnedRoute("POST", "/api/scheduled-tasks/<str:task_id>/trigger", owned_scheduled_task),
    OwnedRoute("GET", "/api/scheduled-tasks/<str:task_id>/runs", owned_scheduled_task),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/scheduled-tasks", owned_scheduled_task),
    # Skills: a custom skill is its owner's alone; the install names a file in A's thread.
    # Knowledge: collections, documents and passages of A's; a search never shows A's words.
    OwnedRoute("GET", "/api/knowledge/collections", owned_kb_collection),
    # (a new name per call: B posts as a session and as a token, and a name is unique per owner)
    OwnedRoute("POST", "/api/knowledge/collections", owned_kb_collection, body=lambda o: {"name": f"fresh-{uuid.uuid4().hex[:6]}"},
               owner_status=201, other_status=201, lists=False),
    OwnedRoute("GET", "/api/knowledge/collections/<str:collection_id>", owned_kb_collection),
    OwnedRoute("PATCH", "/api/knowledge/collections/<str:collection_id>", owned_kb_collection, body={"description": "changed"}),
    OwnedRoute("DELETE", "/api/knowledge/collections/<str:collection_id>", owned_kb_collection, owner_status=204),
    OwnedRoute("GET", "/api/knowledge/collections/<str:collection_id>/documents", owned_kb_document),
    OwnedRoute("POST", "/api/knowledge/collections/<str:collection_id>/documents", owned_kb_thread_file,
               body=lambda o: {"thread_id": o.kwargs["thread_id"], "path": "outputs/notes.md"}, owner_status=202),
    OwnedRoute("GET", "/api/knowledge/documents/<str:document_id>", owned_kb_document),
    OwnedRoute("DELETE", "/api/knowledge/documents/<str:document_id>", owned_kb_document, owner_status=204),
    # A's document is read already, so A's retry is a 409 (found, nothing to retry).
    OwnedRoute("POST", "/api/knowledge/documents/<str:document_id>/retry", owned_kb_document, owner_status=409),
    OwnedRoute("GET", "/api/knowledge/documents/<str:document_id>/file", owned_kb_document),
    OwnedRoute("GET", "/api/knowledge/citations/<str:citation_id>", owned_kb_document),
    OwnedRoute("GET", "/api/knowledge/search", owned_kb_document, body=lambda o: {"q": o.marker}, lists=True),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/knowledge", owned_kb_attached),
    OwnedRoute("PUT", "/api/threads/<str:thread_id>/knowledge", owned_kb_attached,
               body=lambda o: {"collection_ids": [o.kwargs["collection_id"]]}),
    OwnedRoute("GET", "/api/skills", owned_skill),
    OwnedRoute("GET", "/api/skills/<str:name>", owned_skill),
    OwnedRoute("PUT", "/api/skills/<str:name>", owned_skill, body={"enabled": False}),
    OwnedRoute("DELETE", "/api/skills/<str:name>", owned_skill, owner_status=204),
    OwnedRoute("GET", "/api/skills/<str:name>/versions", owned_skill),
    OwnedRoute("POST", "/api/skills/<str:name>/rollback", owned_skill, body={}),
    OwnedRoute("POST", "/api/skills/<str:name>/history/<int:revision_id>/restore", owned_skill_revision),
    OwnedRoute("POST", "/api/skills/install", owned_skill_archive,
               body=lambda o: {"thread_id": o.kwargs["thread_id"], "path": "/mnt/user-data/outputs/mine.skill"}),
    # Custom agents: by name in the caller's own namespace, by assistant id only when visible.
    # The create routes name nothing of A's (a fresh name per call): everyone may create.
    OwnedRoute("GET", "/api/agents", owned_agent),
    OwnedRoute("POST", "/api/agents", owned_agent, body=_fresh_agent, other_status=201, owner_status=201),
    OwnedRoute("GET", "/api/agents/<str:name>", owned_agent),
    OwnedRoute("PUT", "/api/agents/<str:name>", owned_agent, body={"description": "changed"}),
    OwnedRoute("PATCH", "/api/agents/<str:name>", owned_agent, body={"description": "changed"}),
    OwnedRoute("DELETE", "/api/agents/<str:name>", owned_agent, owner_status=204),
    OwnedRoute("POST", "/api/agents/<str:name>/duplicate", owned_agent, body={}, owner_status=201),
    OwnedRoute("GET", "/api/agents/<str:name>/versions", owned_agent),
    OwnedRoute("POST", "/api/assistants", owned_agent, body=_fresh_assistant, other_status=200),
    OwnedRoute("POST", "/api/assistants/search", owned_agent, body={"limit": 100}, lists=True),
    OwnedRoute("POST", "/api/assistants/count", owned_agent, body={}),
    OwnedRoute("GET", "/api/assistants/<str:assistant_id>", owned_agent),
    OwnedRoute("PATCH", "/api/assistants/<str:assistant_id>", owned_agent, body={"description": "changed"}),
    OwnedRoute("DELETE", "/api/assistants/<str:assistant_id>", owned_agent, owner_status=204),
    OwnedRoute("GET", "/api/assistants/<str:assistant_id>/graph", owned_agent),
    OwnedRoute("GET", "/api/assistants/<str:assistant_id>/schemas", owned_agent),
    OwnedRoute("POST", "/api/assistants/<str:assistant_id>/versions", owned_agent, body={}),
    # Memory: each user reaches only their own; routes without a fact id act on the caller's.
    OwnedRoute("GET", "/api/memory", owned_memory),
    OwnedRoute("DELETE", "/api/memory", owned_memory),
    OwnedRoute("GET", "/api/memory/export", owned_memory),
    OwnedRoute("GET", "/api/memory/status", owned_memory),
    OwnedRoute("GET", "/api/memory/config", owned_memory, lists=False),
    OwnedRoute("PATCH", "/api/memory/config", owned_memory, body={"paused": False}),
    OwnedRoute("POST", "/api/memory/facts", owned_memory, body={"content": "fresh"}),
    OwnedRoute("POST", "/api/memory/import", owned_memory, body={"facts": [{"content": "imported"}]}),
    OwnedRoute("PATCH", "/api/memory/facts/<str:fact_id>", owned_memory, body={"content": "renamed"}),
    OwnedRoute("DELETE", "/api/memory/facts/<str:fact_id>", owned_memory),
    # Governance: a user's own rules and decisions; a thread's approval is its owner's to give.
    OwnedRoute("GET", "/api/approvals/rules", owned_approval_rule),
    OwnedRoute("POST", "/api/approvals/rules", owned_approval_rule, body={"tool": "bash", "action": "ask"}, owner_status=201, lists=False),
    OwnedRoute("DELETE", "/api/approvals/rules/<int:rule_id>", owned_approval_rule, owner_status=204),
    OwnedRoute("GET", "/api/approvals/decisions", owned_decision),
    OwnedRoute("GET", "/api/threads/<str:thread_id>/approvals", owned_decision),
    # The thread is not waiting for an approval, so the owner's answer is a 409 (found, not waiting).
    OwnedRoute("POST", "/api/threads/<str:thread_id>/approvals", owned_thread, body={"decision": "approve"}, owner_status=409),
    OwnedRoute("GET", "/api/budget", owned_identity, lists=False),
    # IM channel connections (tests/apps/channels/test_api.py).
    OwnedRoute("GET", "/api/channels/connections", owned_connection),
    OwnedRoute("DELETE", "/api/channels/connections/<str:connection_id>", owned_connection, owner_status=204),
]

# Routes with nothing per user: the same answer for everyone.
NO_USER_OBJECTS = {
    ("GET", "/api/health"),
    ("GET", "/api/health/live"),
    ("GET", "/api/health/ready"),
    ("GET", "/api/schema/"),
    ("GET", "/api/docs/"),
    ("GET", "/api/models"),
    ("GET", "/api/models/<str:name>"),
    ("GET", "/api/features"),
    ("GET", "/api/suggestions/config"),
    ("POST", "/api/scheduled-tasks/preview"),
    # Whether the caller already has an agent of that name: only ever about the caller's own names.
    ("GET", "/api/agents/check"),
    # Admin-only operator settings (tests/apps/mcp): nothing in them belongs to a user.
    ("GET", "/api/mcp/config"),
    ("PUT", "/api/mcp/config"),
    ("PATCH", "/api/mcp/config"),
    ("GET", "/api/mcp/status"),
    ("POST", "/api/mcp/servers/<str:name>/test"),
    # Admin-only operator routes, 403 to everyone else (tests/apps/console/test_console_api.py).
    ("GET", "/api/console/overview"),
    ("POST", "/api/console/runs/<str:run_id>/cancel"),
    # Which chat apps this server offers, and a connect code for the caller only.
    ("GET", "/api/channels/providers"),
    ("POST", "/api/channels/<str:provider>/connect"),
    # Staff only (tests/apps/governance): budgets are set by admins for any user.
    ("PUT", "/api/budgets/<str:target>"),
    # DeerFlow's frontend's sign-in (tests/apps/accounts/test_deerflow_auth.py): the same answer
    # for everyone, or about the caller's own session and password only.
    ("GET", "/api/v1/auth/setup-status"),
    ("GET", "/api/v1/auth/providers"),
    ("GET", "/api/v1/auth/oauth/<str:provider>"),
    ("POST", "/api/v1/auth/login/local"),
    ("POST", "/api/v1/auth/register"),
    ("POST", "/api/v1/auth/initialize"),
    ("POST", "/api/v1/auth/logout"),
    ("POST", "/api/v1/auth/change-password"),
}


def _api_routes() -> set[tuple[str, str]]:
    """Each API route once: /api/langgraph/<x> is /api/<x>'s own pattern (checked below)."""
    return {(method, route.path) for route in route_table()
            if route.path.startswith("/api/") and not route.path.startswith(LANGGRAPH_PREFIX) for method in route.methods}


def test_the_langgraph_routes_are_the_api_routes_own():
    """The /api/langgraph/ mount (deerflow_site/api_urls.py) serves the very views of /api/, with
    the same auth rule, so this walk's answers for /api/<x> are the alias's answers too."""
    routes = route_table()
    by_path = {r.path: r for r in routes if not r.path.startswith(LANGGRAPH_PREFIX)}
    aliases = [r for r in routes if r.path.startswith(LANGGRAPH_PREFIX)]
    assert len(aliases) > 50
    for alias in aliases:
        twin = by_path[canonical_path(alias.path)]
        assert (alias.callback, alias.methods, alias.rule) == (twin.callback, twin.methods, twin.rule), alias.path


def test_an_alias_hides_another_users_thread(user, other_user):
    owned = owned_thread(user)
    client = APIClient()
    client.force_login(other_user)
    path = path_for("/api/langgraph/threads/<str:thread_id>", **owned.kwargs)
    assert client.get(path).status_code == 404
    owner = APIClient()
    owner.force_login(user)
    assert owner.get(path).status_code == 200


def test_every_api_route_is_listed():
    listed = {(r.method, r.path) for r in OWNED_ROUTES} | NO_USER_OBJECTS
    unlisted = sorted(_api_routes() - listed)
    assert not unlisted, (
        "API routes missing from the ownership walk; add each to OWNED_ROUTES (or NO_USER_OBJECTS if it "
        f"holds nothing per user) in tests/apps/accounts/test_route_ownership.py: {unlisted}"
    )
    stale = sorted(listed - _api_routes())
    assert not stale, f"listed routes that the URL conf no longer has: {stale}"


def _drain(response) -> bytes:
    """The whole body, also of a streaming (possibly async) response, so a run started by the
    call has finished before the next step."""
    if not getattr(response, "streaming", False):
        return response.content
    if getattr(response, "is_async", False):

        async def collect():
            return b"".join([chunk async for chunk in response.streaming_content])

        return async_to_sync(collect)()
    return b"".join(response.streaming_content)


def _wait_until_idle(timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while Run.objects.filter(status__in=Run.ACTIVE_STATUSES).exists():
        assert time.monotonic() < deadline, "a run started by the walk did not finish"
        time.sleep(0.02)


def _call(client: APIClient, entry: OwnedRoute, owned: Owned):
    body = entry.body(owned) if callable(entry.body) else entry.body
    response = getattr(client, entry.method.lower())(path_for(entry.path, **owned.kwargs), body, format="json")
    content = _drain(response)
    _wait_until_idle()
    return response.status_code, content.decode(errors="replace")


def _clients_for(user, entry: OwnedRoute):
    session = APIClient()
    session.force_login(user)
    yield "session", session
    rule = next(r for r in route_table() if r.path == entry.path)
    if f"{entry.method} " in rule.rule.partition("token:")[2]:
        token = APIClient()
        token.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(owner=user, name='walk', scopes=ALL_SCOPES).token}")
        yield "token", token


@pytest.fixture
def _scripted_agent(scripted_agent):
    # A script of its own that never runs out: the shared scripted model otherwise keeps
    # whatever script an earlier test on this worker left, used up or not.
    scripted_agent("hello", loop=True)


def _params():
    for entry in OWNED_ROUTES:
        marks = [pytest.mark.xfail(strict=True, reason=entry.known_bug)] if entry.known_bug else []
        yield pytest.param(entry, id=f"{entry.method} {entry.path}", marks=marks)


@pytest.mark.parametrize("entry", list(_params()))
def test_another_users_objects_are_invisible(entry, user, other_user, _scripted_agent):
    owned = entry.setup(user)
    expected = entry.other_status or (404 if entry.names_an_object and not entry.is_list else None)
    for how, client in _clients_for(other_user, entry):
        status, content = _call(client, entry, owned)
        if expected is not None:
            assert status == expected, (how, status, content[:300])
        else:
            assert 200 <= status < 300, (how, status, content[:300])
        if entry.is_list and owned.marker:
            assert owned.marker not in content, how
    owner = APIClient()
    owner.force_login(user)
    status, content = _call(owner, entry, owned)
    assert status == entry.owner_status, content[:300]
    if entry.is_list and owned.marker:
        assert owned.marker in content


@pytest.mark.parametrize("entry", [p for p in _params() if p.values[0].names_an_object and not p.values[0].is_list])
def test_admins_get_no_more_through_the_api(entry, user, admin_user, _scripted_agent):
    """Staff see everyone's objects in Django admin, never through the user API."""
    owned = entry.setup(user)
    client = APIClient()
    client.force_login(admin_user)
    status, content = _call(client, entry, owned)
    assert status == (entry.other_status or 404), (status, content[:300])
