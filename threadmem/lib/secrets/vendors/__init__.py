"""Vendors' tokens, each from the vendor's published format: a prefix (the keyword), an alphabet and a length.

Written for Python's ``re`` from each vendor's documentation (the ``source`` of each rule), and checked against
the true positives gitleaks publishes for its rules of the same vendors (``make bench-secrets``; no file of
gitleaks is copied here). Every rule is bounded on both sides (``\\b`` or no token character next to it) and every
quantifier has an upper bound, so that a match costs the same whatever the length of the line it is in.

Each family in a module of its own; ``RULES`` keeps them in one order.
"""

from __future__ import annotations

from threadmem.lib.secrets.rule import Rule
from threadmem.lib.secrets.vendors import ai, cloud, code_hosts, commerce, messaging, standard_and_other

RULES: tuple[Rule, ...] = (
    *ai.RULES,
    *cloud.RULES,
    *code_hosts.RULES,
    *commerce.RULES,
    *messaging.RULES,
    *standard_and_other.RULES,
)
