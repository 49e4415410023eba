"""Compiled graphs are reused across runs with the same options and rebuilt after a config edit."""

from apps.runs import graphs
from harness.config import reset_config_cache

BUILT = []


def counting_factory(config):
    from tests.support.agents import make_scripted_agent

    BUILT.append(config["configurable"].get("model_name"))
    return make_scripted_agent(config)


async def test_cache_hits_per_option_set_and_config_edit_rebuilds(settings, tmp_path, monkeypatch):
    settings.DEERFLOW_AGENT_FACTORY = "tests.apps.runs.test_graph_cache:counting_factory"
    config_file = tmp_path / "config.yaml"
    config_file.write_text("title:\n  max_words: 5\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(config_file))
    reset_config_cache()
    graphs.clear_graph_cache()
    BUILT.clear()
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()

    async def build(**configurable):
        return await graphs.build_graph({"configurable": configurable}, saver)

    first = await build(thread_id="a", run_id="1", user_id="u1")
    assert await build(thread_id="b", run_id="2", user_id="u2") is first  # per-run keys do not matter
    other = await build(thread_id="a", run_id="3", model_name="m2")
    assert other is not first and BUILT == [None, "m2"]

    config_file.write_text("title:\n  max_words: 6\n")
    assert await build(thread_id="a", run_id="4") is not first
    assert BUILT == [None, "m2", None]
    graphs.clear_graph_cache()
    reset_config_cache()
