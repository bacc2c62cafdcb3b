"""Configuration, read from the environment once (one class per concern)."""

import os
from dataclasses import dataclass, field


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def _flag(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else raw.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, kw_only=True)
class DatabaseSettings:
    url: str = field(default_factory=lambda: _env("DATABASE_URL"))
    """Where the service reads and appends. Empty: `matcha run` starts an embedded server."""
    migrate_on_start: bool = field(default_factory=lambda: _flag("MATCHA_MIGRATE_ON_START", True))
    pool_min: int = field(default_factory=lambda: int(_env("MATCHA_DB_POOL_MIN", "2")))
    pool_max: int = field(default_factory=lambda: int(_env("MATCHA_DB_POOL_MAX", "20")))


@dataclass(frozen=True, kw_only=True)
class RedisSettings:
    url: str = field(default_factory=lambda: _env("REDIS_URL"))
    prefix: str = field(default_factory=lambda: _env("MATCHA_REDIS_PREFIX", "matcha"))
    """Namespaces every key, channel and RQ queue, so tests and tenants never share."""


@dataclass(frozen=True, kw_only=True)
class ApiSettings:
    host: str = field(default_factory=lambda: _env("MATCHA_HOST", "127.0.0.1"))
    port: int = field(default_factory=lambda: int(_env("MATCHA_PORT", "8000")))
    admin_token: str = field(default_factory=lambda: _env("MATCHA_ADMIN_TOKEN"))
    """Bootstraps the first admin: a request bearing this token is admin `admin`."""
    admin_name: str = field(default_factory=lambda: _env("MATCHA_ADMIN_NAME", "admin"))
    data_dir: str = field(default_factory=lambda: _env("MATCHA_DATA_DIR", "var"))
    """Where the embedded servers keep their data between runs."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    redis: RedisSettings = field(default_factory=RedisSettings)
    api: ApiSettings = field(default_factory=ApiSettings)


def load_settings() -> Settings:
    return Settings()
