"""The loud failure every helper outside SparkDash's CPU stand-in gives when called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn


def not_provided(name: str) -> Callable[..., NoReturn]:
    """A callable standing for a kernel helper this stand-in does not implement."""

    def missing(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"sgl_kernel {name} is not in SparkDash's CPU stand-in (bin/sglang-cpu/sgl_kernel): "
            "it covers plain decoding and NGRAM speculative decoding only"
        )

    missing.__name__ = name
    return missing
