"""Reading claim files, Spark Arena recipes and result files; refusing malformed ones by field."""

import textwrap
from pathlib import Path

import pytest

from claims.core.reading import read_claim_file, read_result_file
from claims.core.recipe import read_recipe, recipe_path
from claims.core.schema import ClaimRefused

pytestmark = pytest.mark.backend_free

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "claims"
PEERS = Path(__file__).resolve().parents[2] / "fixtures" / "peers"
ISSUE_SHAPE = textwrap.dedent("""\
    claim:
      source: {title: "...", url: "https://example.org/a", author: "...", published: 2026-11-02}
      hardware: {name: "DGX Spark", bandwidth_gbps: 273, memory_gb: 121, nodes: 1}
      engine: {kind: llama-server, version: "b11434"}
      model: {name: gemma3-270m, quantization: Q4_K_M, bytes_per_token_gb: 0.25}
      settings: {speculative_method: ngram-simple, lookahead: 4, extra_flags: ["--flag", "value"]}
      workload: {prompt_tokens: 128, output_tokens: 64, concurrency: [1, 2], runs: 3}
      figures:
        - {metric: decode_tps, concurrency: 1, value: 56.0}
        - {metric: ttft_ms, concurrency: 1, value: 120}
      tolerance_pct: 5
    """)


def test_it_reads_the_issues_claim_shape():
    claim = read_claim_file("c.yaml", ISSUE_SHAPE)
    assert (claim.engine_kind, claim.engine_version, claim.lookahead) == ("llama-server", "b11434", 4)
    assert claim.concurrency_levels == [1, 2] and claim.bytes_per_token_gb == 0.25
    assert [(f.metric, f.value, f.unit, f.aggregate) for f in claim.figures] == [
        ("decode_tps", 56.0, "tok/s", False),
        ("ttft_ms", 120.0, "ms", False),
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("tolerance_pct: 5", "tolerance_pct: 5\n  extra: 1"), "claim.extra"),
        (("metric: ttft_ms", "metric: ttft_s"), "claim.figures.1.metric"),
        (("value: 120", "value: .nan"), "claim.figures.1.value"),
        (("concurrency: 1, value: 120", "concurrency: 4, value: 120"), "claim.figures.1.concurrency"),
        (('url: "https://example.org/a"', 'url: "file:///etc/passwd"'), "claim.source.url"),
    ],
)
def test_it_refuses_a_malformed_field_by_its_path(change, field):
    with pytest.raises(ClaimRefused, match=rf"^c.yaml: {field}:"):
        read_claim_file("c.yaml", ISSUE_SHAPE.replace(*change))


def test_it_refuses_yaml_tags_that_would_build_objects():
    with pytest.raises(ClaimRefused, match="not YAML"):
        read_claim_file("c.yaml", "claim: !!python/object/apply:os.system ['true']\n")


def test_it_fills_engine_settings_and_workload_from_a_recipe():
    path = EXAMPLES / "qwen38-flash-next-sglang-2node.yaml"
    claim = read_claim_file(
        path.name, path.read_text(), lambda ref: (ref, recipe_path(path, ref).read_text())
    )
    assert (claim.engine_kind, claim.speculative_method, claim.lookahead) == ("sglang", "NEXTN", 3)
    assert (claim.prompt_tokens, claim.output_tokens, claim.concurrency_levels) == (2048, 128, [1, 2, 4])
    assert claim.nodes == 2 and "--trust-remote-code" in claim.extra_flags and claim.quantization == "nvfp4"
    assert claim.origin == "recipe" and claim.recipe_name.endswith(".yaml")


def test_it_reads_vllms_speculative_config_as_method_and_lookahead():
    recipe = read_recipe(
        "r.yaml",
        "recipe_version: '2'\nmodel: m\nruntime: vllm-distributed\n"
        'defaults: {speculative_config: \'{"method":"mtp","num_speculative_tokens":3}\'}\n',
    )
    from claims.core.recipe import speculative

    assert recipe.runtime == "vllm-distributed" and speculative(recipe.defaults) == ("mtp", 3)


@pytest.mark.parametrize(
    "text",
    ["recipe_version: '1'\nmodel: m\nruntime: vllm\n", "recipe_version: '2'\nmodel: m\nruntime: tgi\n"],
)
def test_it_refuses_a_recipe_of_another_version_or_runtime(text):
    with pytest.raises(ClaimRefused, match=r"r.yaml: (recipe_version|runtime):"):
        read_recipe("r.yaml", text)


@pytest.mark.parametrize("reference", ["/etc/passwd", "../outside.yaml", "recipes/../../x.yaml", "~/x.yaml"])
def test_it_refuses_a_recipe_path_outside_the_claim_files_folder(tmp_path, reference):
    (tmp_path / "claims").mkdir()
    with pytest.raises(ClaimRefused, match=r"claim\.recipe"):
        recipe_path(tmp_path / "claims" / "c.yaml", reference)


def test_it_makes_a_claim_of_another_tools_result_file():
    path = next(p for p in sorted(PEERS.glob("vllm/*.json")))
    claim = read_result_file(path.name, path.read_bytes())
    metrics = {f.metric for f in claim.figures}
    assert claim.origin == "result-file" and {"decode_tps", "ttft_ms"} <= metrics
    assert all(f.value > 0 for f in claim.figures)
