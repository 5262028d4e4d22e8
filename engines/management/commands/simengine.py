"""`manage.py simengine --port P`: serve the SparkDash SIMULATOR, a fake engine, in the foreground."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.simulator import ACCEPTANCE_BY_TYPE, FAULTS, OUTPUT_TYPES, SimProfile, serve_forever
from engines.simulator.reasoning import REASONING_STYLES
from engines.simulator.schedule import DEFAULT_DECAY, DEFAULT_DRAFT_COST

# flag -> (option dest = SimProfile field, rule, what it says); None is "not given" where allowed.
RULES: dict[str, tuple[str, Callable[[Any], bool], str]] = {
    "--port": ("port", lambda v: 0 <= v <= 65535, "must be in 0..65535"),
    "--decode-tps": ("decode_tps", lambda v: v is None or v > 0, "must be > 0"),
    "--ttft-ms": ("ttft_ms", lambda v: v >= 0, "must be >= 0"),
    "--acceptance": ("acceptance", lambda v: v is None or 0 <= v <= 1, "must be in [0, 1]"),
    "--acceptance-decay": ("acceptance_decay", lambda v: 0 < v <= 1, "must be in (0, 1]"),
    "--efficiency": ("efficiency", lambda v: 0 < v <= 1, "must be in (0, 1]"),
    "--lookahead": ("lookahead", lambda v: 0 <= v <= 64, "must be in 0..64"),
    "--draft-cost": ("draft_cost", lambda v: v >= 0, "must be >= 0"),
    "--max-tokens": ("default_max_tokens", lambda v: v >= 1, "must be >= 1"),
    "--bandwidth-gbps": ("bandwidth_gbps", lambda v: v is None or v > 0, "must be > 0"),
    "--model-gb": ("model_gb", lambda v: v is None or v > 0, "must be > 0"),
    "--fault-after": ("fault_after", lambda v: v >= 0, "must be >= 0"),
    "--fault-every": ("fault_every", lambda v: v >= 1, "must be >= 1"),
    "--batch-cost": ("batch_cost", lambda v: v >= 0, "must be >= 0"),
    "--prefill-tps": ("prefill_tps", lambda v: v is None or v > 0, "must be > 0"),
    "--cache-tokens": ("cache_tokens", lambda v: v is None or v >= 0, "must be >= 0"),
    "--reasoning-tokens": ("reasoning_tokens", lambda v: v >= 0, "must be >= 0"),
    "--lossy-drafter": ("lossy_drafter", lambda v: v >= 0, "must be >= 0"),
}
PROFILE_FIELDS = [name for flag, (name, _, _) in RULES.items() if flag != "--port"]
PROFILE_FIELDS += ["fault", "reasoning_style"]
BY_TYPE_HELP = "first-position acceptance per output type, e.g. " + ",".join(
    f"{name}={rate:g}" for name, rate in ACCEPTANCE_BY_TYPE.items()
)


class Command(BaseCommand):
    help = (
        "Serve the SparkDash simulator: a fake, bandwidth-bound engine speaking the Ollama and "
        "OpenAI-compatible (llama-server) APIs with scheduled, deterministic timings."
    )
    requires_system_checks: list[str] = []  # it uses no models or settings

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--decode-tps", type=float, help="plain decode speed (default 40)")
        parser.add_argument("--ttft-ms", type=float, default=150.0)
        parser.add_argument("--acceptance", type=float, help="one rate for every position and output type")
        parser.add_argument("--acceptance-by-type", help=BY_TYPE_HELP + " (types left out keep theirs)")
        # One --acceptance pins every type and position (the behaviour before acceptance by type).
        parser.add_argument("--acceptance-decay", type=float, default=DEFAULT_DECAY, help="x per position")
        parser.add_argument("--lookahead", type=int, default=0, help="draft tokens; 0 = off")
        parser.add_argument("--draft-cost", type=float, default=DEFAULT_DRAFT_COST, help="x one target pass")
        parser.add_argument("--efficiency", type=float, default=1.0, help="share of the bandwidth ceiling")
        parser.add_argument("--log-file", help="also append the engine's log lines to this file")
        parser.add_argument("--max-tokens", dest="default_max_tokens", type=int, default=128)
        parser.add_argument("--bandwidth-gbps", type=float, help="with --model-gb, sets decode speed")
        parser.add_argument("--model-gb", type=float)
        parser.add_argument("--fault", choices=FAULTS)
        parser.add_argument("--fault-after", type=int, default=0, help="tokens before the fault")
        parser.add_argument("--fault-every", type=int, default=1, help="the fault hits every k-th request")
        parser.add_argument("--batch-cost", type=float, default=0.2, help="step x (1 + cost * (n - 1))")
        parser.add_argument("--prefill-tps", type=float, help="model the prompt cache and prefill time")
        parser.add_argument("--cache-tokens", type=int, help="RAM prompt cache limit (default none; 0 = off)")
        parser.add_argument("--reasoning-tokens", type=int, default=0, help="reasoning per answer")
        parser.add_argument(
            "--reasoning-style", choices=REASONING_STYLES, default="field",
            help="field: reasoning_content / thinking; tags: <think>...</think> in the content",
        )
        parser.add_argument("--lossy-drafter", type=int, default=0,
                            help="every n-th accepted draft token comes out wrong (0 = lossless drafts)")

    def handle(self, *args: Any, **options: Any) -> None:
        for flag, (name, rule, says) in RULES.items():
            if not rule(options[name]):
                raise CommandError(f"{flag} {says}, not {options[name]}")
        values = {name: options[name] for name in PROFILE_FIELDS}
        values["acceptance_by_type"] = by_type(options["acceptance_by_type"])
        try:
            profile = SimProfile(**values)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        announce = lambda url: self._announce(profile, url)  # noqa: E731
        serve_forever(profile, options["host"], options["port"], announce, options["log_file"])

    def _announce(self, profile: SimProfile, url: str) -> None:
        spec = "no drafts"
        if profile.lookahead:
            spec = f"lookahead {profile.lookahead}, acceptance {_acceptance(profile)}"
            if profile.lossy_drafter:
                spec += f", LOSSY drafter (every {profile.lossy_drafter}th accepted draft token wrong)"
        every = f" on every {profile.fault_every}th request" if profile.fault_every > 1 else ""
        fault = f", fault {profile.fault} after {profile.fault_after} tokens{every}" if profile.fault else ""
        self.stdout.write(
            f"SparkDash SIMULATOR (not a real engine) listening on {url} (Ollama /api/*, OpenAI /v1/*): "
            f"decode {profile.tps:g} tok/s, TTFT {profile.ttft_ms:g} ms, {spec}, "
            f"batch cost {profile.batch_cost:g}, {_cache(profile)}{_reasoning(profile)}{fault}"
        )
        self.stdout.flush()


def by_type(text: str | None) -> dict[str, float]:
    """--acceptance-by-type's "type=rate,..." over the defaults; CommandError names what is wrong."""
    rates = dict(ACCEPTANCE_BY_TYPE)
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, _, rate = item.partition("=")
        name = name.strip()
        if name not in OUTPUT_TYPES:
            raise CommandError(f"--acceptance-by-type: {name!r} is not one of {', '.join(OUTPUT_TYPES)}")
        try:
            rates[name] = float(rate)
        except ValueError:
            raise CommandError(f"--acceptance-by-type: {name} needs a number, not {rate!r}") from None
        if not 0 <= rates[name] <= 1:
            raise CommandError(f"--acceptance-by-type: {name} must be in [0, 1], not {rates[name]:g}")
    return rates


def _acceptance(profile: SimProfile) -> str:
    if profile.acceptance is not None:
        return f"{profile.acceptance:g} for every output type"
    rates = ", ".join(f"{name} {rate:g}" for name, rate in profile.acceptance_by_type.items())
    return f"by output type ({rates}), x{profile.acceptance_decay:g} per position"


def _cache(profile: SimProfile) -> str:
    if profile.prefill_tps is None:
        return "prompt cache not modelled"
    limit = "no limit" if profile.cache_tokens is None else f"limit {profile.cache_tokens} tokens"
    return f"prefill {profile.prefill_tps:g} tok/s, prompt cache {limit}"


def _reasoning(profile: SimProfile) -> str:
    if not profile.reasoning_tokens:
        return ""
    return f", {profile.reasoning_tokens} reasoning tokens ({profile.reasoning_style})"
