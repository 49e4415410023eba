"""Documents added through the API are read off the request path into passages that keep
their page or section, and the search finds them there."""

from __future__ import annotations

import pytest

from tests.support.documents import make_docx, make_pdf

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_pdf_docx_markdown_and_html_become_searchable_passages_with_their_page_or_section(user_client, user, client, kb):
    cid = kb.collection()
    docs = kb.upload(cid,
                     ("handbook.pdf", make_pdf([["Welcome to the staff handbook."], ["Refunds are paid within fourteen days."]])),
                     ("travel.docx", make_docx([("Heading1", "Travel policy"), ("", "Trains are booked in second class."),
                                                ("Heading2", "Hotels"), ("", "Hotels cost at most 120 euros a night.")])),
                     ("setup.md", b"# Setup\n\n## Printers\n\nThe printer on floor three needs the blue cable.\n"),
                     ("page.html", b"<html><head><title>Kitchen</title></head><body><h1>Kitchen rules</h1>"
                                   b"<p>The dishwasher runs every evening at nine.</p></body></html>"))
    assert [d["status"] for d in docs] == ["queued"] * 4
    listed = {d["name"]: d for d in kb.documents(cid)}
    assert {n: (d["status"], d["progress"]) for n, d in listed.items()} == {n: ("ready", 100) for n in listed}, listed

    hit = kb.search("refunds fourteen days")[0]
    assert hit["document_title"] == "handbook.pdf" and hit["page"] == 2 and "fourteen days" in hit["text"]
    hit = kb.search("hotel price per night")[0]
    assert hit["document_title"] == "Travel policy" and hit["section"] == "Travel policy > Hotels"
    hit = kb.search("printer cable")[0]
    assert hit["section"] == "Setup > Printers" and "blue cable" in hit["text"]
    hit = kb.search("when does the dishwasher run")[0]
    assert hit["document_title"] == "Kitchen rules" and "nine" in hit["text"]

    # The passage's link opens its document page at the passage.
    client.force_login(user)
    page = client.get(hit["url"].split("#")[0])
    assert page.status_code == 200 and f'id="{hit["citation_id"]}"'.encode() in page.content
    cite = client.get(f"/knowledge/cite/{hit['citation_id']}")
    assert cite.status_code == 302 and cite["Location"] == hit["url"]


def test_a_document_that_cannot_be_read_fails_with_its_reason_and_a_retry_reads_it_again(user_client, kb):
    cid = kb.collection()
    kb.upload(cid, ("broken.pdf", b"%PDF-1.4 not really a pdf"))
    (doc,) = kb.documents(cid)
    assert doc["status"] == "failed" and doc["passage_count"] == 0 and "could not convert" in doc["error"]
    again = user_client.post(f"/api/knowledge/documents/{doc['id']}/retry")
    assert again.status_code == 202
    from apps.knowledge import queue

    assert queue.drain(timeout=60)
    assert kb.documents(cid)[0]["status"] == "failed"


def test_a_new_version_replaces_the_old_in_search_and_both_are_kept(user_client, kb):
    cid = kb.collection()
    kb.upload(cid, ("policy.md", b"# Policy\n\nThe office opens at eight."))
    kb.upload(cid, ("policy.md", b"# Policy\n\nThe office opens at seven."))
    versions = kb.documents(cid)
    assert [(d["version"], d["is_current"]) for d in versions] == [(2, True), (1, False)]
    texts = [h["text"] for h in kb.search("when does the office open")]
    assert texts == ["The office opens at seven."]
    user_client.delete(f"/api/knowledge/documents/{versions[0]['id']}")
    assert [h["text"] for h in kb.search("when does the office open")] == ["The office opens at eight."]


def test_words_with_accents_and_cjk_text_are_found(user_client, kb):
    kb.upload(kb.collection(), ("fr.md", "# Horaires\n\nLe café ouvre à huit heures.".encode()),
              ("zh.md", "# 规定\n\n报销需要在三十天内提交收据。".encode()))
    assert [h["text"] for h in kb.search("café")] == ["Le café ouvre à huit heures."]
    assert [h["text"] for h in kb.search("cafe")] == ["Le café ouvre à huit heures."]
    assert [h["text"] for h in kb.search("报销")] == ["报销需要在三十天内提交收据。"]  # a word inside a sentence
