import pytest

from runs.jobs import validate_params


def test_it_fills_in_defaults():
    assert validate_params("speed", {}) == {"reps": 3, "warmup": 1}


def test_it_accepts_numbers_given_as_text():
    assert validate_params("speed", {"reps": "5", "max_tokens": 64})["reps"] == 5


@pytest.mark.parametrize(
    ("job", "params", "message"),
    [
        ("speed", {"reps": 0}, "reps must be between 1 and 50"),
        ("speed", {"reps": "many"}, "reps must be a whole number"),
        ("speed", {"max_tokens": 10**9}, "max_tokens must be between"),
        ("speed", {"temperature": 1}, "unknown parameter 'temperature'"),
        ("sweep", {}, "job must be one of"),
    ],
)
def test_it_rejects_bad_parameters_naming_the_field(job, params, message):
    with pytest.raises(ValueError, match=message):
        validate_params(job, params)
