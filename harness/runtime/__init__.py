"""Run-time plumbing shared by the server and the embedded client: checkpointers, stream
modes, event translation and the stream bridge."""
