"""The job kinds a page names together, read from the registry (runs.templatetags.job_kinds)."""
from __future__ import annotations

from django.utils import translation

from runs.templatetags.job_kinds import job_labels


def test_it_names_the_scored_kinds_by_their_labels():
    labels = job_labels("scored").split(", ")
    assert "Speed" in labels and "Lossless check" in labels
    assert "Concurrency sweep" not in labels and "Memory bandwidth" not in labels


def test_it_adds_the_kinds_compare_shows_on_their_own_rows():
    assert "Concurrency sweep" in job_labels("compared").split(", ")


def test_it_names_them_in_the_readers_language():
    english = job_labels("scored")
    with translation.override("ja"):
        assert job_labels("scored") != english
