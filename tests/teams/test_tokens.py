"""teams.tokens: shown once, stored as a digest, revocable."""

from __future__ import annotations

import pytest

from teams.tokens import digest, new_token

pytestmark = pytest.mark.backend_free


def test_it_makes_tokens_that_differ_and_carry_their_prefix():
    first, second = new_token("sdr"), new_token("sdr")
    assert first != second and first.startswith("sdr_") and len(first) > 40


def test_it_stores_a_digest_that_does_not_contain_the_token():
    token = new_token("sdm")
    assert len(digest(token)) == 64 and token not in digest(token)
    assert digest(token) == digest(token) and digest(token) != digest(token + "x")
