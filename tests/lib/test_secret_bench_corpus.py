"""The secrets benchmark's corpus generator (bench/secret_corpus.py), not the redactor's score."""

from __future__ import annotations

import pytest

from bench.secret_corpus import GENERIC_CONTEXTS, HALVES, VENDORS, bait_texts, own_corpus


@pytest.mark.parametrize("half", HALVES)
def test_each_recorded_secret_occurs_in_its_sample_text(half):
    samples = own_corpus(half)
    assert samples
    for sample in samples:
        assert sample.secrets, sample.context
        for vendor, secret in sample.secrets:
            assert secret in sample.text, (sample.context, vendor)


def test_the_bait_holds_no_recorded_secret():
    secrets = {secret for half in HALVES for sample in own_corpus(half) for _, secret in sample.secrets}
    for text in bait_texts():
        assert not [secret for secret in secrets if secret in text], text


def test_the_corpus_is_the_same_on_every_run():
    assert own_corpus("tune") == own_corpus("tune")
    assert bait_texts() == bait_texts()


def test_the_halves_hold_different_tokens():
    # Short human-chosen passwords may repeat across the halves, as they do among people; tokens never.
    tune, report = ({s for sample in own_corpus(half) for _, s in sample.secrets if len(s) > 16} for half in HALVES)
    assert tune
    assert not tune & report


@pytest.mark.parametrize("half", HALVES)
def test_every_vendor_is_in_every_generic_context(half):
    vendors_by_context = {}
    for sample in own_corpus(half):
        vendors_by_context.setdefault(sample.context, set()).update(vendor for vendor, _ in sample.secrets)
    for context in GENERIC_CONTEXTS:
        assert vendors_by_context[context] >= {vendor.name for vendor in VENDORS}, context
