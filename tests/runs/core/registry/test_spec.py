import pytest

from runs.core.jobs.spec import JobConfig

pytestmark = pytest.mark.backend_free


def config(thinking=None, budget=None):
    sampling = {} if thinking is None else {"thinking": thinking}
    return JobConfig("qwen3-8b", sampling, 0, "llama-server", None, thinking_budget=budget,
                     thinking_answer_budget=18_432)


@pytest.mark.parametrize(
    ("thinking", "budget", "asked", "expected"),
    [(None, None, 2048, 2048), (False, None, 2048, 2048), (True, None, 2048, 18_432),
     (True, None, 32_768, 32_768), (True, 4096, 2048, 6144)],
)
def test_it_grows_the_answer_budget_only_when_thinking_is_on(thinking, budget, asked, expected):
    assert config(thinking, budget).answer_budget(asked) == expected
