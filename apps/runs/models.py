"""Runs and their durable event journal."""

import uuid

from django.conf import settings
from django.db import models


class RunManager(models.Manager):
    """Runs only: a thread reservation (``ThreadReservation``) shares the table and its
    active-slot index, but it is not a run, so the run listings, counts and usage never see it."""

    def get_queryset(self):
        return super().get_queryset().filter(kind=Run.Kind.RUN)


class Run(models.Model):
    class Kind(models.TextChoices):
        # What holds the thread's one active slot: a run, or a reserved thread operation
        # that must not overlap a run (apps/runs/reservations.py).
        RUN = "run"
        CHECKPOINT_WRITE = "checkpoint_write", "checkpoint write (compaction, state update)"
        BRANCH = "branch"
        ARTIFACT_WRITE = "artifact_write", "artifact write"
        DELETE = "delete", "thread delete"

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCESS = "success"
        ERROR = "error"
        INTERRUPTED = "interrupted"
        TIMEOUT = "timeout"

    ACTIVE_STATUSES = (Status.PENDING, Status.RUNNING)

    class MultitaskStrategy(models.TextChoices):
        REJECT = "reject"
        INTERRUPT = "interrupt"
        ROLLBACK = "rollback"
        ENQUEUE = "enqueue"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.RUN)
    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="runs")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    assistant_id = models.CharField(max_length=128, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    multitask_strategy = models.CharField(max_length=16, choices=MultitaskStrategy.choices, default=MultitaskStrategy.REJECT)
    kwargs = models.JSONField(default=dict, blank=True, help_text="The run request with secrets removed.")
    metadata = models.JSONField(default=dict, blank=True)
    model_name = models.CharField(max_length=128, blank=True, default="")
    request_id = models.CharField(max_length=128, blank=True, default="", help_text="The id of the request that started the run (X-Request-ID).")
    trace_id = models.CharField(max_length=128, blank=True, default="", help_text="The trace the run belongs to (X-Trace-Id).")
    traceparent = models.CharField(max_length=55, blank=True, default="", help_text="The W3C traceparent the run's trace continues, when the request sent one.")
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    token_usage = models.JSONField(default=dict, blank=True, help_text="Per-model usage.")
    stop_reason = models.CharField(max_length=64, blank=True, default="")
    error = models.TextField(blank=True, default="")
    lease_owner = models.CharField(max_length=128, blank=True, default="", help_text="The process executing the run.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancel_action = models.CharField(max_length=16, blank=True, default="", help_text="interrupt or rollback")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = RunManager()
    # Every row of the table, reservations included: for admission and recovery, which
    # decide who holds a thread's slot whatever holds it.
    slots = models.Manager()

    class Meta:
        default_manager_name = "objects"
        base_manager_name = "slots"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["thread", "-created_at"], name="run_thread_created_idx"),
            models.Index(fields=["owner", "-created_at"], name="run_owner_created_idx"),
            models.Index(fields=["status"], name="run_status_idx"),
        ]
        constraints = [
            # The arbiter of admission: two racing requests cannot both hold a thread,
            # whatever process they run in. A finished run leaves the index; a thread
            # reservation (any kind but "run") sits in it too, so a run and a compaction,
            # branch, artifact write or delete cannot overlap either.
            models.UniqueConstraint(
                fields=["thread"],
                condition=models.Q(status__in=["pending", "running"]),
                name="uq_runs_thread_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES


class ReservationManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().exclude(kind=Run.Kind.RUN)


class ThreadReservation(Run):
    """A thread operation holding the thread's active slot (a ``Run`` row of another kind,
    status running, leased by its process): taken and released by
    ``apps.runs.reservations.thread_reserved``, deleted when the operation ends, and by
    recovery when its process died."""

    objects = ReservationManager()

    class Meta:
        proxy = True
        default_manager_name = "objects"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} on {self.thread_id}"


class RunEvent(models.Model):
    """A durable event of a run; ``seq`` orders all events of a thread across its runs."""

    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="events")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    event_type = models.CharField(max_length=32)
    category = models.CharField(max_length=16)
    content = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["thread", "seq"]
        indexes = [models.Index(fields=["run", "seq"], name="run_event_run_seq_idx")]
        constraints = [models.UniqueConstraint(fields=["thread", "seq"], name="uq_run_events_thread_seq")]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.seq} {self.event_type}"


class VisibilitySwitch(models.Model):
    """A user chose which version of an answer a thread shows (the chat's ‹ 1/2 › arrows).

    Regenerate and edit-rerun record what they replace in the new run's metadata
    (``replay.superseded_run_ids``); a switch back to an earlier version has no run of its own,
    so it is this row: the runs it hides (the version shown until then and the turns that
    continued from it) and the runs it shows again (the chosen version and the turns that had
    continued from it). ``apps/runs/visibility.py`` folds replays and switches in time order."""

    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="visibility_switches")
    shown_run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", help_text="The version chosen.")
    hidden_run_ids = models.JSONField(default=list, blank=True)
    shown_run_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["thread", "created_at"]
        indexes = [models.Index(fields=["thread", "created_at"], name="visibility_switch_thread_idx")]

    def __str__(self) -> str:
        return f"{self.thread_id}: show {self.shown_run_id}"
