"""The typed readers settings use: a bad value raises ImproperlyConfigured at start-up, naming the variable."""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

# What DRF's SimpleRateThrottle.parse_rate reads (it goes by the period's first letter).
RATE = re.compile(r"[1-9][0-9]{0,8}/(s|sec|m|min|h|hour|d|day)")


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {value}")
    return value


def env_rate_or_off(name: str, default: str) -> str | None:
    """A rate (N/sec, N/min, N/hour or N/day, as DRF's throttles read it), or None for off: ``false`` turns the
    thing off, ``true`` (or nothing) keeps it on at ``default``."""
    value = env_str(name) or default
    if value.lower() in {"0", "false", "no", "off"}:
        return None
    if value.lower() in {"1", "true", "yes", "on"}:
        return default
    if not RATE.fullmatch(value):
        raise ImproperlyConfigured(f"{name} must be false, true or a rate (N/sec, N/min, N/hour, N/day), got {value!r}")
    return value


def env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value
