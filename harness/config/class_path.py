"""Resolve ``package.module:Attribute`` references used by ``use:`` keys in the config."""

from __future__ import annotations

import importlib
import re
from typing import Any

_CLASS_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")

# Distribution names that differ from the naive "module_name -> module-name" guess.
_PACKAGE_HINTS = {
    "langchain_openai": "langchain-openai",
    "langchain_anthropic": "langchain-anthropic",
    "langchain_google_genai": "langchain-google-genai",
    "langchain_deepseek": "langchain-deepseek",
    "langchain_ollama": "langchain-ollama",
    "langchain_mistralai": "langchain-mistralai",
    "langchain_aws": "langchain-aws",
    "langchain_community": "langchain-community",
}


class ClassPathError(ValueError):
    """A ``use:`` reference that cannot be resolved; the message says what to do."""


def check_format(path: str) -> str:
    if not isinstance(path, str) or not _CLASS_PATH.match(path.strip()):
        raise ClassPathError(f"{path!r} is not a class path of the form 'package.module:ClassName'")
    return path.strip()


def resolve(path: str) -> Any:
    """Import the module and return the attribute, or raise :class:`ClassPathError`."""
    module_name, _, attr_path = check_format(path).partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or module_name).split(".")[0]
        if missing == module_name.split(".")[0]:
            dist = _PACKAGE_HINTS.get(missing, missing.replace("_", "-"))
            raise ClassPathError(f"module '{module_name}' is not installed (install it with: pip install {dist})") from None
        raise ClassPathError(f"importing '{module_name}' failed: {exc}") from None
    except Exception as exc:  # an import-time crash in a third-party module
        raise ClassPathError(f"importing '{module_name}' failed: {type(exc).__name__}: {exc}") from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ClassPathError(f"module '{module_name}' has no attribute '{attr_path}'") from None
    return obj
