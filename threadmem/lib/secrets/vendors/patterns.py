"""What the vendor rules share: the right bound of a token, an alphabet, the checks a match must pass."""

from __future__ import annotations

from threadmem.lib.secrets import shapes

# No token character right after a match: the token is whole.
END = r"(?![A-Za-z0-9_-])"
END_ALNUM = r"(?![A-Za-z0-9])"
HEX = "[a-f0-9]"


def random_looking(value: str) -> bool:
    return shapes.entropy(value) >= 3.0


def aws_key_id(value: str) -> bool:
    # A key id's 16 characters are base32 (A-Z, 2-7): a run of capitals with no digit is a word or a DNA sequence
    # (ASIAPACIFIC…, ACCAGT…). Random ids without a digit (1 in 28) stay; the id alone is no secret (AWS says so),
    # the secret access key beside it goes.
    return any(c.isdigit() for c in value[4:])
