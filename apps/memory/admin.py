from django.contrib import admin

from apps.memory.models import MemoryFact, MemoryProfile, PendingMemoryUpdate
from harness.memory.retrieval import index_text


def _indexed(fact: MemoryFact) -> MemoryFact:
    """An edit here changes the content: retrieval must find the new words, not the old."""
    fact.search_text = index_text(fact.content)
    return fact


class MemoryFactInline(admin.TabularInline):
    model = MemoryFact
    extra = 0
    fields = ("content", "category", "confidence", "source_kind", "source_thread_id", "created_at", "valid_until", "revision")
    readonly_fields = ("source_kind", "source_thread_id", "created_at", "revision")


@admin.register(MemoryProfile)
class MemoryProfileAdmin(admin.ModelAdmin):
    list_display = ("owner", "agent", "paused", "revision", "updated_at")
    list_filter = ("paused",)
    search_fields = ("owner__username", "agent")
    readonly_fields = ("revision", "created_at", "updated_at")
    inlines = [MemoryFactInline]

    def save_formset(self, request, form, formset, change):
        facts = formset.save(commit=False)
        for fact in facts:
            _indexed(fact).save()
        for gone in formset.deleted_objects:
            gone.delete()
        formset.save_m2m()


@admin.register(MemoryFact)
class MemoryFactAdmin(admin.ModelAdmin):
    list_display = ("content", "category", "confidence", "profile", "source_thread_id", "created_at")
    list_filter = ("category", "source_kind")
    search_fields = ("content", "profile__owner__username")
    readonly_fields = ("fact_id", "source_thread_id", "source_run_id", "source_message_id", "revision")

    def save_model(self, request, obj, form, change):
        super().save_model(request, _indexed(obj), form, change)


@admin.register(PendingMemoryUpdate)
class PendingMemoryUpdateAdmin(admin.ModelAdmin):
    """Updates a stopped server saved for the next start: shown so an operator sees what waits."""

    list_display = ("thread_id", "owner", "created_at")
    search_fields = ("thread_id", "owner__username")
    readonly_fields = ("owner", "thread_id", "job", "created_at")
