"""structlog set-up: JSON lines for machines, a readable console format on a terminal.

One call at start-up; every module then uses `structlog.get_logger(__name__)`. Standard-library
logging (urllib3, the kubernetes client) goes through the same renderer so nothing prints raw.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure(log_format: str | None = None, level: str = "info") -> None:
    fmt = log_format or ("console" if sys.stderr.isatty() else "json")
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer() if fmt == "console" else structlog.processors.JSONRenderer()
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]
    numeric = getattr(logging, level.upper(), logging.INFO)
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(processors=[
        structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer], foreign_pre_chain=shared))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(max(numeric, logging.WARNING))
