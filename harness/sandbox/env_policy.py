"""The environment a sandboxed command sees, and masking of injected secrets.

The server's own environment holds model keys, database URLs, the Django secret and a lot
of harmless-looking detail about the deployment (settings module, port, sign-up switches,
package-index settings, the container's name). A command the model runs (possibly under a
prompt injection) should learn none of it, so the environment is built from an allow-list:
the locale and terminal names below, the provider's own settings (PATH, HOME, TMPDIR, …),
the names the operator passes through or sets in ``sandbox.env``, and the request's
injected variables. A deny-list of secret-looking names still applies to everything copied
from the server, as a second fence. Request-scoped secrets are masked in whatever output
the model sees.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# A name containing any of these is treated as a credential. Substring matching is
# deliberately broad: dropping a harmless variable costs little, leaking a key costs a lot.
_SECRET_NAME_PARTS = ("KEY", "SECRET", "TOKEN", "PASS", "PWD", "CREDENTIAL", "DSN", "PRIVATE", "COOKIE", "SESSION", "AUTH")
# Exact names that carry credentials without a tell-tale word in them.
_SECRET_NAMES = frozenset(
    {
        "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "BROKER_URL",
        "AMQP_URL", "MONGODB_URI", "MONGO_URL", "PGPASSFILE", "PGSERVICEFILE", "GH_PAT", "GITHUB_PAT",
        "NETRC", "DEERFLOW_TEST_REDIS_URL", "SENTRY_URL",
    }
)
# Harmless names that the substring rule would otherwise drop.
_ALLOWED_NAMES = frozenset({"PWD", "OLDPWD", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS"})
# user:password@ inside a URL-ish value, whatever the variable is called.
_CREDENTIAL_IN_VALUE = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MASK = "********"


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in _ALLOWED_NAMES:
        return False
    if upper in _SECRET_NAMES:
        return True
    return any(part in upper for part in _SECRET_NAME_PARTS)


# Copied from the server when set: they change how programs format text, not what they reach.
_INHERITED_NAMES = frozenset({"LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR"})
_INHERITED_PREFIXES = ("LC_",)
# The local provider runs host programs, which need the host's PATH and a HOME and TMPDIR
# that exist; the bubblewrap provider replaces all three with its own.
HOST_RUNTIME_NAMES = ("PATH", "HOME", "TMPDIR")


def is_env_name(name: object) -> bool:
    return isinstance(name, str) and bool(_ENV_NAME.match(name))


def _inheritable(name: str, passthrough: frozenset[str]) -> bool:
    return name in _INHERITED_NAMES or name.startswith(_INHERITED_PREFIXES) or name in passthrough


def scrub_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The inherited environment without secret-looking names or credential-bearing values."""
    source = os.environ if environ is None else environ
    return {
        name: value
        for name, value in source.items()
        if not is_secret_name(name) and not _CREDENTIAL_IN_VALUE.search(value)
    }


def check_injected_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Validate request-scoped variables; a bad name is the caller's bug, so it raises."""
    checked: dict[str, str] = {}
    for name, value in (env or {}).items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ValueError(f"invalid environment variable name: {name!r}")
        if not isinstance(value, str) or "\x00" in value:
            raise ValueError(f"environment variable {name} must be a string without NUL bytes")
        checked[name] = value
    return checked


def build_sandbox_env(env: Mapping[str, str] | None = None, *, base: Mapping[str, str] | None = None,
                      overrides: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None,
                      passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The allow-listed part of ``base`` (the server's environment by default), then the
    provider's ``overrides``, the operator's ``extra`` (``sandbox.env``), and last the
    request's injected variables."""
    source = os.environ if base is None else base
    allowed = frozenset(passthrough)
    result = scrub_environment({name: value for name, value in source.items() if _inheritable(name, allowed)})
    result.update(overrides or {})
    result.update(extra or {})
    result.update(check_injected_env(env))
    return result


def mask_secrets(text: str, secrets: Mapping[str, str] | None) -> str:
    """Replace every injected secret value in ``text``.

    Longer values go first so a secret that contains another is masked whole. A value
    split across a truncation boundary is handled by :func:`mask_partial_edges`.
    """
    if not text or not secrets:
        return text
    for value in sorted({v for v in secrets.values() if v}, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


def mask_partial_edges(head: str, tail: str, secrets: Mapping[str, str] | None) -> tuple[str, str]:
    """Mask a secret cut in half where the middle of a long output was dropped.

    ``head`` may end with the start of a secret and ``tail`` begin with its end; neither
    half contains the full value, so :func:`mask_secrets` alone would let it through.
    """
    # Fragments shorter than three characters are left alone: masking every stray
    # character that happens to begin a secret would garble ordinary output.
    for value in {v for v in (secrets or {}).values() if len(v) > 3}:
        for n in range(len(value) - 1, 2, -1):
            if head.endswith(value[:n]):
                head = head[: len(head) - n] + MASK
                break
        for n in range(len(value) - 1, 2, -1):
            if tail.startswith(value[-n:]):
                tail = MASK + tail[n:]
                break
    return head, tail
