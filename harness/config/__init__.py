"""Configuration: ``config.yaml`` (pydantic models), ``extensions_config.json`` and paths."""

from harness.config.app_config import AppConfig, ModelConfig
from harness.config.errors import ConfigError
from harness.config.extensions import ExtensionsConfig, get_extensions_config, save_extensions_config
from harness.config.loader import get_app_config, load_config, parse_config, reset_config_cache
from harness.config.paths import deer_flow_home, resolve_config_path, resolve_extensions_path, thread_user_data_dir

__all__ = [
    "AppConfig",
    "ConfigError",
    "ExtensionsConfig",
    "ModelConfig",
    "deer_flow_home",
    "get_app_config",
    "get_extensions_config",
    "load_config",
    "parse_config",
    "reset_config_cache",
    "resolve_config_path",
    "resolve_extensions_path",
    "save_extensions_config",
    "thread_user_data_dir",
]
