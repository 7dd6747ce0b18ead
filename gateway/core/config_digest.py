"""A digest of the settings a gateway runs with, the same for the same settings and free of secrets.

It is in `/healthz` (`config_digest`) and in each recording's metadata, so two gateways, or a
recording and a gateway, can be told apart or matched without showing tokens or passwords.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any

import orjson

from gateway.core.config import Config

_SECRET_KEYS = frozenset({"tokens", "credentials", "hash", "token_file", "tls_key", "key_file"})
_URL_PASSWORD = re.compile(r"//([^:/@]*):[^@/]*@")


def _normalized(value: Any) -> Any:
    """Plain data of a config value without secrets (auth tokens, key files, URL passwords)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _normalized(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in _SECRET_KEYS}  # fmt: skip
    if isinstance(value, tuple | list):
        return [_normalized(item) for item in value]
    if isinstance(value, str):
        return _URL_PASSWORD.sub(r"//\1@", value)
    return value


def config_digest(config: Config) -> str:
    """sha256 (hex) of the normalized config without its secrets: the same settings give the same digest."""
    normal = _normalized(config)
    return hashlib.sha256(orjson.dumps(normal, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()
