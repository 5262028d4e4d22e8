"""`manage.py gguf PATH_OR_URL [--bandwidth-gbps N]`: print what a GGUF model holds, as JSON.

Architecture, tensors, quantization types, bytes read per token, MoE and MTP layers (see
``engines.gguf_inspect``); with a bandwidth, the roofline decode ceiling (``engines.roofline``).
A URL is read from a prefix fetched with HTTP range requests, not downloaded whole.
"""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.gguf_inspect import GGUFError, GGUFInfo, inspect_file
from engines.gguf_remote import inspect_url
from engines.roofline import roofline


class Command(BaseCommand):
    help = (
        "Inspect a GGUF model (a local path, or an http(s) URL read with range requests): "
        "architecture, quantization, bytes per token, MoE and MTP layers, and the roofline ceiling."
    )
    requires_system_checks: list[str] = []  # it uses no models or settings

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", metavar="PATH_OR_URL")
        parser.add_argument("--bandwidth-gbps", type=float, help="memory bandwidth, for the ceiling")
        parser.add_argument("--bytes-per-token", type=int, help="override the inspected bytes per token")
        parser.add_argument("--measured-tps", type=float, help="decode speed measured, for efficiency")
        parser.add_argument("--tensors", action="store_true", help="list every tensor too")

    def handle(self, *args: Any, **options: Any) -> None:
        needs_bandwidth = options["bytes_per_token"] is not None or options["measured_tps"] is not None
        if options["bandwidth_gbps"] is None and needs_bandwidth:
            raise CommandError("--bytes-per-token and --measured-tps need --bandwidth-gbps")
        try:
            info = self._inspect(options["source"])
        except GGUFError as exc:
            raise CommandError(str(exc)) from exc
        found = info.to_dict(tensors=options["tensors"])
        if options["bandwidth_gbps"] is not None:
            found["roofline"] = self._roofline(info, options)
        self.stdout.write(json.dumps(found, indent=2))

    def _inspect(self, source: str) -> GGUFInfo:
        if source.startswith(("http://", "https://")):
            return inspect_url(source)
        return inspect_file(source)

    def _roofline(self, info: GGUFInfo, options: dict[str, Any]) -> dict[str, Any]:
        try:
            line = roofline(
                options["bandwidth_gbps"],
                info.bytes_per_token,
                override=options["bytes_per_token"],
                measured_tps=options["measured_tps"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        return line.to_dict()
