"""Names the upload and artifact writers use for files that are not finished yet.

Writers stage bytes in a hidden ``.upload-<hex>.part`` (uploads) or ``.artifact-<hex>.part``
(artifact edits) beside the destination and rename it into place when complete. Anything
that lists thread files for people or the model should skip these; the startup sweep removes
ones a crash left behind. Kept in the harness so sandbox tools can share the rule without
importing Django code.
"""

from __future__ import annotations

import re

STAGING_PREFIXES = (".upload-", ".artifact-")
STAGING_SUFFIX = ".part"
_STAGING_NAME = re.compile(r"^\.(upload|artifact)-[0-9a-f]+\.part$")


def is_staging_name(name: str) -> bool:
    """True for a writer's staging file name (exactly ``.upload-<hex>.part`` / ``.artifact-<hex>.part``)."""
    return bool(_STAGING_NAME.match(name))


__all__ = ["STAGING_PREFIXES", "STAGING_SUFFIX", "is_staging_name"]
