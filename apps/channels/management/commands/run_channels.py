"""``manage.py run_channels``: the IM channels worker (see apps/channels/worker.py)."""

from __future__ import annotations

import asyncio
import logging
import signal

from django.core.management.base import BaseCommand

logger = logging.getLogger("apps.channels")


class Command(BaseCommand):
    help = "Run the IM channel adapters (Telegram, ...) configured under channels: in config.yaml."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true",
                            help="Exit 0 when config.yaml turns any channel on, 1 otherwise (used by `make run`).")
        parser.add_argument("--plan", action="store_true",
                            help="Print which channels would start and why the others stay off, then exit.")

    def handle(self, *args, **options):
        from apps.channels.worker import ChannelsWorker, any_channel_enabled

        if options["check"]:
            raise SystemExit(0 if any_channel_enabled() else 1)
        if options["plan"]:
            from apps.channels.config import channels_settings
            from apps.channels.worker import plan

            planned = plan(channels_settings())
            for name in sorted(planned.adapters):
                self.stdout.write(f"{name}: starts")
            for name, why in sorted(planned.disabled.items()):
                self.stdout.write(f"{name}: off ({why})")
            return

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, stop.set)
                except (NotImplementedError, RuntimeError):  # Windows
                    pass
            await ChannelsWorker().run_forever(stop)

        from apps.runs.runtime import get_runtime

        # The runs a channel starts execute here: on the embedded stack the web servers follow
        # them (a user who opens the thread in the chat) by asking this process, as a peer.
        get_runtime().serve_streams_to_peers()
        self.stdout.write("Channels worker starting (Ctrl-C to stop)")
        asyncio.run(main())
        # The runs this process executed are settled; its runs loop stops with it.
        from apps.runs.runtime import stop_runtime

        stop_runtime()
