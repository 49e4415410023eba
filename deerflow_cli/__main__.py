"""``deerflow`` / ``python -m deerflow_cli``: parse the command line, pick a side, open the screen."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from deerflow_cli.app import DeerFlowConsole
from deerflow_cli.backend import BackendError, ServerBackend


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="deerflow",
        description="DeerFlow in the terminal: against a server with a personal access token, or embedded in this process.",
        epilog="Keys: Enter sends, Ctrl-C cancels the running answer, Ctrl-T threads, Ctrl-N new thread, "
               "Ctrl-O model, Ctrl-G agent, Ctrl-Q quits.")
    parser.add_argument("--server", default=os.environ.get("DEERFLOW_SERVER"),
                        help="server URL, e.g. http://127.0.0.1:8000 (env DEERFLOW_SERVER); without it the agent runs embedded")
    parser.add_argument("--token-file", help="read the personal access token from this file (else env DEERFLOW_TOKEN)")
    parser.add_argument("--thread", help="resume this thread")
    parser.add_argument("--model", help="model name (default: the server's or config.yaml's first)")
    parser.add_argument("--agent", help="custom agent name (default: lead_agent)")
    parser.add_argument("--user", default="default", help="embedded mode: the user id whose files and skills are used")
    parser.add_argument("--checkpoints", help="embedded mode: checkpointer URL (default: sqlite under DEER_FLOW_HOME/console/)")
    return parser.parse_args(argv)


def _token(args: argparse.Namespace) -> str:
    if args.token_file:
        with open(os.path.expanduser(args.token_file)) as fh:
            return fh.read().strip()
    return os.environ.get("DEERFLOW_TOKEN", "").strip()


async def _check_server(url: str, token: str) -> None:
    # On a client of its own: the screen's event loop is another one, and a pool of
    # connections does not move between loops.
    backend = ServerBackend(url, token)
    try:
        await backend.check()
    finally:
        await backend.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.server:
        token = _token(args)
        if not token:
            print("deerflow: a server needs a personal access token: set DEERFLOW_TOKEN or pass --token-file "
                  "(create one on the server's Tokens page).", file=sys.stderr)
            return 2
        try:
            asyncio.run(_check_server(args.server, token))
        except BackendError as exc:
            print(f"deerflow: {args.server}: {exc}", file=sys.stderr)
            return 1
        backend = ServerBackend(args.server, token)
    else:
        # Imported here, not at the top: it loads the whole agent framework, which a server
        # session never needs.
        from deerflow_cli.embedded import EmbeddedBackend

        backend = EmbeddedBackend(user_id=args.user, checkpoints=args.checkpoints)
    DeerFlowConsole(backend, thread_id=args.thread, model=args.model, agent=args.agent).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
