"""The sandbox middleware acquires the thread's sandbox and records its id."""

from harness.sandbox import get_sandbox_provider


async def test_sandbox_acquired_and_recorded(agent_factory):
    h = agent_factory(["ok", "ok again"])
    await h.send("hi")
    sandbox_id = h.state()["sandbox"]["sandbox_id"]
    assert sandbox_id
    await h.send("again")
    assert h.state()["sandbox"]["sandbox_id"] == sandbox_id  # same thread, same sandbox
    assert get_sandbox_provider().acquire(h.user_id, h.thread_id) == sandbox_id


async def test_releasing_variant_hands_the_sandbox_back(agent_factory):
    from harness.agents.middlewares.sandbox import ReleasingSandboxMiddleware

    h = agent_factory(["ok"], extra_middlewares=[ReleasingSandboxMiddleware()])
    await h.send("hi")
    sandbox_id = h.state()["sandbox"]["sandbox_id"]
    assert sandbox_id not in get_sandbox_provider().cached_ids()
