from django.contrib import admin

from apps.knowledge.models import Collection, CollectionShare, Document
from apps.knowledge.services import collection_purge, document_purge


class ShareInline(admin.TabularInline):
    model = CollectionShare
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "agent_id", "shared_with_everyone", "created_at"]
    search_fields = ["name", "owner__username"]
    raw_id_fields = ["owner"]
    inlines = [ShareInline]

    # Through the service, so a deleted collection's files go too.
    def delete_model(self, request, obj):
        collection_purge(collection=obj)

    def delete_queryset(self, request, queryset):
        for collection in queryset:
            collection_purge(collection=collection)


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "collection", "status", "progress", "chunk_count", "is_current", "created_at"]
    list_filter = ["status", "source_kind"]
    search_fields = ["name", "title", "collection__name"]
    readonly_fields = ["sha256", "size", "chunk_count", "embedded", "progress", "error"]

    def delete_model(self, request, obj):
        document_purge(document=obj)

    def delete_queryset(self, request, queryset):
        for document in queryset:
            document_purge(document=document)
