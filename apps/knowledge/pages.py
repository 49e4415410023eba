"""The Knowledge page (a shell; static/knowledge/knowledge.js talks to ``/api/knowledge``),
the document page (its passages, server-rendered, each at ``#<citation id>``) and the
citation link the chat makes of ``[kb-…]``, which opens the document at the passage."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie

from apps.errors import NotFound
from apps.knowledge import selectors
from apps.knowledge.serializers import passage_url


@login_required
@ensure_csrf_cookie
def knowledge_page(request):
    return render(request, "knowledge/index.html")


def _or_404(read, **kwargs):
    try:
        return read(**kwargs)
    except NotFound:
        raise Http404 from None


@login_required
def document_page(request, document_id):
    document = _or_404(selectors.document_get_readable, user=request.user, document_id=document_id)
    return render(request, "knowledge/document.html", {
        "document": document, "collection": document.collection, "passages": selectors.passages_of(document),
        "is_owner": document.collection.owner_id == request.user.pk})


@login_required
def citation_page(request, citation_id):
    passage = _or_404(selectors.passage_get_readable, user=request.user, citation_id=citation_id)
    return redirect(passage_url(passage.document_id, passage.citation_id))
