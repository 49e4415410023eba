"""The tool registry: sandbox tools, built-ins and config tools by class path and group."""

import pytest
from langchain_core.tools import BaseTool, tool

from harness.config import parse_config
from harness.tools.registry import ToolLoadError, get_available_tools


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def whisper(text: str) -> str:
    """Whisper the text."""
    return text.lower()


class Counter(BaseTool):
    name: str = "counter"
    description: str = "Count characters."
    start: int = 0

    def _run(self, text: str) -> int:
        return self.start + len(text)


CFG = """
tool_groups: [{name: web}, {name: text}]
tools:
  - {name: shout, group: text, use: 'tests.harness.agents.test_registry:shout'}
  - {name: whisper, group: text, use: 'tests.harness.agents.test_registry:whisper'}
  - {name: count_chars, group: web, use: 'tests.harness.agents.test_registry:Counter', start: 10}
"""


def names(tools):
    return [t.name for t in tools]


def test_all_sources_combined_in_order():
    tools = get_available_tools(config=parse_config(CFG))
    got = names(tools)
    assert {"bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep"} <= set(got)
    assert {"present_files", "view_image", "ask_clarification"} <= set(got)
    assert got[-3:] == ["shout", "whisper", "count_chars"]
    counter = next(t for t in tools if t.name == "count_chars")
    assert counter.invoke({"text": "abc"}) == 13  # extra keys configured the class


def test_groups_vision_and_non_interactive_filters():
    tools = names(get_available_tools(config=parse_config(CFG), groups=["web"], include_view_image=False, non_interactive=True))
    assert "count_chars" in tools and "shout" not in tools
    assert "view_image" not in tools and "ask_clarification" not in tools


def test_broken_config_tool_fails_loudly():
    cfg = parse_config("tools:\n  - {name: bad, use: 'tests.harness.agents.test_registry:nothing_here'}\n")
    with pytest.raises(ToolLoadError, match="tool 'bad'.*has no attribute"):
        get_available_tools(config=cfg)


def test_duplicate_names_keep_the_first():
    def shadow(path: str) -> str:
        """A second ls."""
        return "shadow"

    extra = tool("ls")(shadow)
    tools = get_available_tools(config=parse_config(""), extra_tools=[extra])
    assert names(tools).count("ls") == 1
    assert next(t for t in tools if t.name == "ls") is not extra
