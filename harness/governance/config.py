"""``config.yaml`` sections for governance: ``approvals`` and ``budgets``.

Both are off unless configured, and then cost a run nothing: no middleware is added, no
query is made. The approval rules are compiled here, once per config load.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from harness.governance.policy import Policy, RuleError, compile_policy


class ApprovalsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The operator's rules, first match wins: {name, tool, match?, action, agents?}.
    rules: list[dict[str, Any]] = Field(default_factory=list)
    # Users may add their own (stricter) rules on the Approvals page. Costs one indexed query
    # per run that calls a tool, so it is opt-in.
    user_rules: bool = False
    _policy: Policy = PrivateAttr(default_factory=Policy)

    @model_validator(mode="after")
    def _compile(self) -> ApprovalsConfig:
        try:
            self._policy = compile_policy(self.rules)
        except RuleError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def policy(self) -> Policy:
        return self._policy

    @property
    def active(self) -> bool:
        return bool(self.rules) or self.user_rules


class BudgetsConfig(BaseModel):
    """Per-user token/cost caps. The caps themselves are set in Django admin (a default row
    for everyone, overrides per user); this switch decides whether runs check them."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    # Fraction of a cap at which the UI starts warning.
    warn_at: float = Field(0.8, gt=0, le=1)
