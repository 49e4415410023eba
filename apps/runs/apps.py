from django.apps import AppConfig


async def _recovery_sweep(runtime) -> None:
    from apps.runs.recovery import sweep_forever

    await sweep_forever(runtime)


async def _lease_keeper(runtime) -> None:
    from apps.runs.worker import keep_leases_forever

    await keep_leases_forever()


class RunsConfig(AppConfig):
    name = "apps.runs"
    label = "runs"
    verbose_name = "Runs"

    def ready(self) -> None:
        from django.conf import settings

        from apps.runs import reservations, selectors, state
        from apps.runs.runtime import add_loop_service
        from apps.threads import services as thread_services
        from harness.config.loader import set_recheck_seconds

        # The runs loop's companions; imported when the loop starts, not at Django's start-up
        # (the worker brings in the whole agent).
        add_loop_service("run-recovery", _recovery_sweep)
        # Threads sit below the engine and ask it whether a run holds a thread, and have it drop
        # a deleted thread's checkpoints.
        thread_services.active_run_checks.append(selectors.thread_has_active_run)
        thread_services.thread_cleanups.append(state.thread_state_delete)
        if reservations.thread_delete_reserved not in thread_services.delete_guards:
            thread_services.delete_guards.append(reservations.thread_delete_reserved)
        add_loop_service("run-leases", _lease_keeper)
        # config.yaml is looked at once per interval, not on every admission and every run.
        set_recheck_seconds(getattr(settings, "CONFIG_RECHECK_SECONDS", 1.0))
