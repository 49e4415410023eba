"""Which of a run's messages the journal writes (what `/messages/page` shows): each once, and
none from before the run, however the values events present the list."""

from langchain_core.messages import AIMessage, HumanMessage

from apps.runs.journal import RunProgress, message_events


def journaled(events):
    return [(e.event_type, e.content["content"]) for e in events]


def test_a_list_that_extends_the_last_one_journals_its_new_messages_once():
    progress = RunProgress()
    asked = HumanMessage("question", id="h1")
    answer = AIMessage("answer", id="a1", usage_metadata={"input_tokens": 5, "output_tokens": 2, "total_tokens": 7})
    assert journaled(message_events([asked], progress, "m")) == [("llm.human.input", "question")]
    assert journaled(message_events([asked, answer], progress, "m")) == [("llm.ai.response", "answer")]
    assert message_events([asked, answer], progress, "m") == []
    # the answer replaced by id (a new object in its place) is not a new message
    assert message_events([asked, AIMessage("answer, revised", id="a1")], progress, "m") == []
    assert progress.llm_calls == 1 and progress.usage["m"]["total_tokens"] == 7


def test_older_messages_stay_out_even_when_a_summary_replaces_them():
    progress = RunProgress()
    older = [HumanMessage("old question", id="o1"), AIMessage("old answer", id="o2")]
    progress.assume_older(older)
    asked = HumanMessage("new question", id="h1")
    assert journaled(message_events([*older, asked], progress, "m")) == [("llm.human.input", "new question")]
    # summarization rewrote the list: a summary first, the last older message kept
    summary = HumanMessage("summary of the thread so far", id="s1")
    events = message_events([summary, older[1], asked, AIMessage("new answer", id="a1")], progress, "m")
    assert journaled(events) == [("llm.human.input", "summary of the thread so far"), ("llm.ai.response", "new answer")]
