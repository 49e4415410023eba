"""``manage.py run_channels``: the IM channels worker (see apps/integrations/channels/worker.py)."""

from __future__ import annotations

import asyncio
import logging
import signal

from django.core.management.base import BaseCommand

logger = logging.getLogger("apps.integrations.channels")


class Command(BaseCommand):
    help = "Run the IM channel adapters (Telegram, ...) configured under channels: in config.yaml."

    def handle(self, *args, **options):
        from apps.integrations.channels.worker import ChannelsWorker

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, stop.set)
                except (NotImplementedError, RuntimeError):  # Windows
                    pass
            await ChannelsWorker().run_forever(stop)

        self.stdout.write("Channels worker starting (Ctrl-C to stop)")
        asyncio.run(main())
        # The runs this process executed are settled; its runs loop stops with it.
        from apps.runs.runtime import stop_runtime

        stop_runtime()
