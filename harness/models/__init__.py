"""Chat models from ``config.yaml``: the factory and the model listing the API serves."""

from harness.models.factory import (
    ModelError,
    ModelUnavailableError,
    UnknownModelError,
    api_model_entry,
    create_chat_model,
    get_model_config,
    list_models,
    model_info,
)

__all__ = [
    "ModelError",
    "ModelUnavailableError",
    "UnknownModelError",
    "api_model_entry",
    "create_chat_model",
    "get_model_config",
    "list_models",
    "model_info",
]
