"""Reading a model's follow-up suggestions leniently: reasoning and fences stripped, JSON or lines."""

from harness.agents.suggestions import parse_suggestions


def test_json_inside_reasoning_and_fences():
    text = '<think>hmm ["not this"]</think>\n```json\n["A?", "B?", "A?", "C?", "D?"]\n```'
    assert parse_suggestions(text, 3) == ["A?", "B?", "C?"]


def test_an_unclosed_think_block_and_plain_lines():
    assert parse_suggestions("<think>never closed", 3) == []
    assert parse_suggestions("1. First?\n- Second?\n\n", 3) == ["First?", "Second?"]


def test_non_strings_are_dropped():
    assert parse_suggestions('[1, "ok?", null, {"a": 1}]', 3) == ["ok?"]
