from runs.core.jobs.concurrency.kind import describe

PARAMS = {"levels": [1, 4], "answer_tokens": 64, "reps": 2}


def test_it_states_the_prompt_length_of_a_sized_sweep():
    assert describe(PARAMS | {"prompt_tokens": 300}) == (
        "1, 4 requests at once · 300-token prompts · 64-token answers · 2 bursts per level"
    )


def test_it_states_no_prompt_length_for_the_short_prompt():
    assert "prompt" not in describe(PARAMS | {"prompt_tokens": 0})
    assert "prompt" not in describe(PARAMS)
