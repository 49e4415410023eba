"""A Chat Completions request's messages sent as ``langchain_openai`` built them, for models on
the OpenAI SDK.

Before it sends a request the SDK walks the whole body against its typed-dict declarations
(``openai._utils._transform``), to rename aliased keys and format dates and files. The chat
message parameters declare none of those, so for the messages the walk changes nothing, but it
looks every key of every message up in the typing machinery: with 600 messages it cost about
100 ms of CPU per model call here, nineteen twentieths of what building the request cost, and
the history of a long thread grew every turn by it. ``langchain_openai`` has already turned each
message into the plain dict the API takes (``_convert_message_to_dict``); this hands that list to
the SDK as part of ``extra_body``, which the SDK merges over the walked body as it is, so the
bytes sent are the same and only the walk of the messages is skipped. Every other parameter
still goes through the SDK's transform.

The tools' definitions go the same way (langchain_openai built them with
``convert_to_openai_tool``; the walk would look at every key of every JSON schema), and so do
the scalar parameters and flat objects of scalars (``model``, ``temperature``,
``stream_options``…): the walk hashes the ``Literal`` of every OpenAI model name for its caches at
each step under ``model``, about 530 calls per request for a string it returns as it is. (No
chat completion parameter of the SDK declares an alias or a format; the tests hold the bytes
sent to the stock client's.) What ``create`` reads itself (``stream``, ``timeout``, the
``extra_*``) stays an argument. A call whose
messages are not a list of dicts, or whose ``extra_body`` already names ``messages`` or
``tools``, goes through the SDK unchanged. An SDK whose client has no
``chat.completions.create`` is left untouched: slower, never wrong.
"""

from __future__ import annotations

import functools
from typing import Any

from openai import omit

from harness.models.sync_streams import keep_connection

_MARK = "_deerflow_messages_as_built"


# What langchain_openai hands over already as the API's plain JSON, and which declares no alias
# or format in the SDK's types: the messages, and the tools' definitions (each schema walked
# key by key otherwise, about 5,000 calls per request for the lead agent's tools).
_AS_BUILT = ("messages", "tools")


# What ``create`` reads besides putting it in the body: these stay its arguments.
_READ_BY_CREATE = frozenset({"messages", "stream", "timeout", "extra_headers", "extra_query", "extra_body"})
_SCALARS = (str, int, float, bool)


def _plain(value: Any) -> bool:
    return isinstance(value, list) and all(type(item) is dict for item in value)


def _scalar_json(value: Any) -> bool:
    """A scalar, or an object of scalars: JSON the SDK's walk returns unchanged."""
    return type(value) in _SCALARS or (type(value) is dict and all(type(v) in _SCALARS for v in value.values()))


def _moved(kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The call's arguments with its messages and tools in ``extra_body``, or None to leave it as is."""
    extra = kwargs.get("extra_body")
    if extra is not None and (not isinstance(extra, dict) or any(key in extra for key in _AS_BUILT)):
        return None
    moved = {key: kwargs[key] for key in _AS_BUILT if _plain(kwargs.get(key))}
    if "messages" not in moved:
        return None
    moved.update((key, value) for key, value in kwargs.items()
                 if key not in _READ_BY_CREATE and key not in moved and _scalar_json(value) and not (extra and key in extra))
    # An empty list is what the SDK walks for the messages, and ``omit`` (left out of the body)
    # for the model: both are required arguments. The tools and the other moved parameters are
    # left out of its walk. extra_body's values replace them in the body.
    rest = {key: value for key, value in kwargs.items() if key not in moved}
    rest["messages"] = []
    if "model" in moved:
        rest["model"] = omit
    return {**rest, "extra_body": {**(extra or {}), **moved}}


def _wrap(completions: Any, is_async: bool) -> bool:
    create = getattr(completions, "create", None)
    if create is None:
        return False
    if getattr(create, _MARK, False):
        return True
    if is_async:
        @functools.wraps(create)
        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            return await create(*args, **(_moved(kwargs) or kwargs))
    else:
        @functools.wraps(create)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            result = create(*args, **(_moved(kwargs) or kwargs))
            return keep_connection(result) if kwargs.get("stream") else result
    wrapped._deerflow_messages_as_built = True  # type: ignore[attr-defined]
    completions.create = wrapped
    return True


def send_messages_as_built(model: Any) -> bool:
    """Install on ``model``'s SDK clients (sync and async); False when it has none."""
    done = []
    for attr, is_async in (("root_client", False), ("root_async_client", True)):
        client = getattr(model, attr, None)
        completions = getattr(getattr(client, "chat", None), "completions", None) if client is not None else None
        if completions is not None:
            done.append(_wrap(completions, is_async))
    return bool(done) and all(done)
