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
        ("lookahead", {"lengths": [2, None]}, "lengths item must be a whole number, not None"),
    ],
)
def test_it_rejects_bad_parameters_naming_the_field(job, params, message):
    with pytest.raises(ValueError, match=message):
        validate_params(job, params)


@pytest.mark.parametrize(
    ("job", "name"), [("mmlu-pro", "dataset"), ("evalplus", "dataset"), ("agent-table", "fixture")]
)
def test_it_refuses_a_path_outside_the_data_folders(job, name, settings, tmp_path):
    settings.SPARKDASH_DATA_DIRS = [tmp_path / "datasets"]
    (tmp_path / "datasets").mkdir()
    (tmp_path / "elsewhere").mkdir()
    for outside in ("/etc", str(tmp_path / "elsewhere"), str(tmp_path / "datasets" / ".." / "elsewhere")):
        with pytest.raises(ValueError, match=f"{name}: .* is outside the data folders"):
            validate_params(job, {name: outside})


def test_it_accepts_paths_in_a_data_folder_and_the_shipped_samples(settings, tmp_path):
    settings.SPARKDASH_DATA_DIRS = [tmp_path]
    (tmp_path / "mmlu").mkdir()
    inside = str(tmp_path / "mmlu")
    assert validate_params("mmlu-pro", {"dataset": inside})["dataset"] == inside
    assert validate_params("mmlu-pro", {"dataset": "sample"})["dataset"] == "sample"
    assert validate_params("agent-table", {"fixture": "routes_12"})["fixture"] == "routes_12"
