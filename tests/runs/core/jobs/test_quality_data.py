"""Reading local dataset copies: size limits and malformed files refused with the file named."""
import pytest

from runs.core.jobs.quality_data import DatasetError, load_split, split_files

pytestmark = pytest.mark.backend_free


def test_it_refuses_a_split_file_over_the_size_limit(tmp_path):
    (tmp_path / "test.jsonl").write_text('{"question": "q"}\n' * 100)
    assert split_files(tmp_path, "test", max_bytes=10_000) == [tmp_path / "test.jsonl"]
    too_big = r"test\.jsonl is 1,800 bytes; a dataset file may hold at most 1,000"
    with pytest.raises(DatasetError, match=too_big):
        split_files(tmp_path, "test", max_bytes=1000)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"question": "q"}\n{"question": \n', r"test\.jsonl:2: not valid JSON"),
        (b'["a list"]\n', r"test\.jsonl:1: expected a JSON object"),
        (b'{"question": "\xff"}\n', r"test\.jsonl"),
    ],
)
def test_it_names_the_line_of_a_malformed_split(tmp_path, content, message):
    (tmp_path / "test.jsonl").write_bytes(content)
    with pytest.raises(DatasetError, match=message):
        list(load_split(tmp_path, "test"))


def test_it_refuses_a_folder_without_the_split(tmp_path):
    (tmp_path / "validation.jsonl").write_text("{}\n")
    with pytest.raises(DatasetError, match="no test split"):
        split_files(tmp_path, "test")
