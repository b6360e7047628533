"""Schema post-processing: what drf-spectacular cannot derive from the serializers."""

from __future__ import annotations

from typing import Any

# Bodies whose view refuses a key it does not know (``require_keys``); a multipart form ignores extra fields.
OPEN_BODIES = {"ImportRequest"}


def closed_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Mark every JSON request body ``additionalProperties: false``: the views answer 400 to an unknown key."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and name not in OPEN_BODIES and component.get("type") == "object":
            component["additionalProperties"] = False
    return result
