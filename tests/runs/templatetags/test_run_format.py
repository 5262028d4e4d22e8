"""run_format: a quality run's headline with its interval and count, and its score broken down as
its summary type declares (needle by length and depth, MMLU-Pro by category), on the run page."""
from __future__ import annotations

import pytest

from runs.models import Run
from runs.templatetags.run_format import figure_number, percent_of
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db


def page_of(client, job, summary):
    run = RunFactory(job=job, status=Run.Status.SUCCEEDED, summary=summary)
    return client.get(run.get_absolute_url()).content.decode()


def test_it_breaks_a_needle_score_down_by_length_and_depth_with_each_shares_interval(alice_client):
    summary = {"score": 5, "total": 8,
               "by_length": {"8000": {"found": 4, "total": 4}, "1000": {"found": 1, "total": 4}},
               "by_depth": {"0.5": {"found": 2, "total": 4}, "0.1": {"found": 3, "total": 4}}}
    page = page_of(alice_client, "needle", summary)
    assert "62.5 %" in page and "5 of 8 needles" in page  # the headline, its count
    assert "30.6\u201386.3 % (95 % interval)" in page  # Wilson, 5 of 8
    by_length = page[page.index("needles found by haystack length"):page.index("needles found by depth")]
    assert by_length.index(">1000<") < by_length.index(">8000<")  # numeric order
    assert "25.0 %" in by_length and "1 of 4 needles" in by_length and "4.6\u201369.9 %" in by_length
    assert "100.0 %" in by_length and "51.0\u2013100.0 %" in by_length


def test_it_breaks_mmlu_pro_accuracy_down_by_category_over_the_questions_answered(alice_client):
    summary = {"accuracy": 0.5, "correct": 5, "total": 12, "answered": 10, "budget_hit": 2,
               "by_category": {"law": {"correct": 1, "total": 6, "budget_hit": 2, "accuracy": 0.25},
                               "math": {"correct": 4, "total": 6, "budget_hit": 0, "accuracy": 4 / 6}}}
    page = page_of(alice_client, "mmlu-pro", summary)
    table = page[page.index("accuracy by category"):]
    assert "1 of 4 questions" in table and "4 of 6 questions" in table and "66.7 %" in table


def test_it_shows_no_breakdown_for_a_speed_run_or_a_summary_that_does_not_fit(alice_client):
    assert "breakdown" not in page_of(alice_client, "speed", {"decode_tps_client": None})
    odd = page_of(alice_client, "needle", {"score": 5, "total": 8, "by_length": {"8000": "all"}})
    assert "needles found by haystack length" not in odd


def test_it_writes_a_figure_as_the_catalogue_scales_and_rounds_it():
    assert figure_number(0.1555, "log_acceptance") == "15.6"
    assert figure_number(2.3456, "tokens_per_verification") == "2.35"
    assert figure_number(None, "log_acceptance") == "—"


def test_it_writes_a_share_as_a_whole_percent_and_a_dash_with_nothing_to_divide_by():
    assert percent_of(1, 6) == "17"
    assert percent_of(3, 6) == "50"
    assert percent_of(0, 0) == "—"
    assert percent_of(None, 6) == "—"


def test_it_shows_the_engine_logs_acceptance_as_the_catalogue_declares_it(alice_client):
    logged = {"acceptance_rate": 176 / 1132, "accepted": 176, "generated": 1132, "requests": 6}
    page = page_of(client=alice_client, job="speed", summary={"log_acceptance": logged})
    assert "176 / 1132 = 15.5 % over 6 requests" in " ".join(page.split())
