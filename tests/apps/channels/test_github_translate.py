"""Which GitHub deliveries address the bot, and what the agent is told about them."""

from __future__ import annotations

import pytest

from apps.channels.base import ChatRef
from apps.channels.adapters.github import MalformedDelivery, signature_valid, translate
from tests.support.fake_github import BOT_LOGIN, SECRET, issue_comment, review_comment, sign

SETTINGS = {"mention_login": BOT_LOGIN}


def test_issue_comment_mentioning_the_bot_carries_the_repository_context():
    payload = issue_comment(f"@{BOT_LOGIN} please find the root cause", number=7, title="Crash on empty input")
    message = translate("issue_comment", payload, delivery="d-1", settings=SETTINGS)
    assert message.chat == ChatRef(provider="github", workspace="", chat="octo/hello", topic="7")
    assert (message.sender_id, message.sender_name, message.message_id) == ("583231", "octocat", "d-1")
    assert message.text.startswith("please find the root cause\n")
    for part in ("Repository: octo/hello", "Issue #7: Crash on empty input", "Comment by @octocat:",
                 payload["comment"]["html_url"], "Event: issue_comment"):
        assert part in message.text


def test_pull_request_comments_and_review_comments():
    on_pr = translate("issue_comment", issue_comment(f"@{BOT_LOGIN} review", number=9, pull_request=True),
                      delivery="d-2", settings=SETTINGS)
    assert "Pull request #9" in on_pr.text
    inline = translate("pull_request_review_comment", review_comment(f"why this? @{BOT_LOGIN}"), delivery="d-3", settings=SETTINGS)
    assert inline.chat.topic == "12" and "File: src/parse.py (line 40)" in inline.text
    assert inline.text.startswith("why this?")


@pytest.mark.parametrize("event, payload", [
    ("issue_comment", issue_comment("no mention here")),
    ("issue_comment", issue_comment(f"@{BOT_LOGIN}-ci is another account")),
    ("issue_comment", {**issue_comment(f"@{BOT_LOGIN} hi"), "action": "edited"}),
    ("issue_comment", issue_comment(f"@{BOT_LOGIN} my own answer", login=BOT_LOGIN, uid=9)),
    ("issue_comment", {**issue_comment(f"@{BOT_LOGIN} hi"),
                       "comment": {**issue_comment("")["comment"], "body": f"@{BOT_LOGIN} x",
                                   "user": {"login": "dependabot[bot]", "id": 5, "type": "Bot"}}}),
    ("push", {"ref": "refs/heads/main"}),
])
def test_deliveries_that_do_not_address_the_bot(event, payload):
    assert translate(event, payload, delivery="d", settings=SETTINGS) is None


@pytest.mark.parametrize("payload, why", [
    ([1, 2], "not a JSON object"),
    ({"action": "created", "comment": {"body": "@deerflow-bot x"}}, "payload.comment.user is missing"),
    ({**issue_comment("@deerflow-bot x"), "issue": None}, "payload.issue has the wrong type"),
    ({**issue_comment("@deerflow-bot x"), "repository": {}}, "payload.repository.full_name is missing"),
])
def test_malformed_comment_payloads_name_what_is_wrong(payload, why):
    with pytest.raises(MalformedDelivery, match=why):
        translate("issue_comment", payload, delivery="d", settings=SETTINGS)


def test_signature():
    body = b'{"zen": "Keep it logically awesome."}'
    assert signature_valid(SECRET, body, sign(SECRET, body))
    assert not signature_valid(SECRET, body + b" ", sign(SECRET, body))
    assert not signature_valid(SECRET, body, sign("another secret", body))
    assert not signature_valid(SECRET, body, None)
    assert not signature_valid(SECRET, body, sign(SECRET, body).replace("sha256=", "sha1="))
