"""What the embedded default adds to Daphne and Django's ASGI handler to serve HTTP from one
machine: the Daphne server with bounded, streamed request bodies, the sync-chain ASGI handler,
the pre-fork launcher for several web processes, the stream relay between them, request body
limits, CPU pinning and GC tuning. Kept together, with the internals each relies on listed in
README.md, so that a Django, Daphne or Twisted upgrade shows at once what it broke."""
