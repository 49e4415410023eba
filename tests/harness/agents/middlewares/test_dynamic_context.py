"""Per-turn facts go into the first user message of the request, in the user's timezone."""

import datetime as dt
from zoneinfo import ZoneInfo

from harness.agents.middlewares.dynamic_context import DynamicContextMiddleware


async def test_date_in_users_timezone_in_first_user_message_only(agent_factory):
    h = agent_factory(["a", "b"])
    await h.send("first", timezone="Pacific/Kiritimati")
    await h.send("second", timezone="Pacific/Kiritimati")
    today = dt.datetime.now(ZoneInfo("Pacific/Kiritimati")).strftime("%Y-%m-%d")
    sent = h.model.requests[1].messages
    humans = [m for m in sent if m.type == "human"]
    assert f"Today's date: {today}" in humans[0].content and "Pacific/Kiritimati" in humans[0].content
    assert humans[1].content == "second"  # later messages untouched
    assert "Today's date" not in sent[0].content


async def test_unknown_timezone_falls_back_to_utc(agent_factory):
    h = agent_factory(["a"])
    await h.send("hi", timezone="Mars/Olympus")
    assert "timezone UTC" in h.model.requests[0].messages[1].content


def test_extra_providers_plug_in():
    mw = DynamicContextMiddleware(providers=[lambda req: "Memory: likes tea", lambda req: None])

    class Req:
        messages = []

        def override(self, messages):
            self.messages = messages
            return self

    out = mw._inject(Req())
    assert "Memory: likes tea" in out.messages[0].content
