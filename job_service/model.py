"""What a job is: the operations that may run as one, a job's stored request, its state, and
how its outcome is kept (compressed)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from common.vocabulary import GEOCODER_BATCH_CSV_TYPES, GEOCODER_BATCH_JSON_LINES_TYPES

QUEUED = "queued"
RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"
ACTIVE = (QUEUED, RUNNING)
FINISHED = (SUCCEEDED, FAILED, CANCELLED)


@dataclass(frozen=True)
class Operation:
    """A synchronous operation that may run as a job: its public path and the service that
    answers it (replayed there on the same path)."""

    name: str
    path: str
    service: str
    json_body: bool
    # the media types of a text body (json_body False), as the synchronous operation reads them
    text_types: tuple[str, ...] = ("text/csv", "text/plain")


OPERATIONS = (
    Operation("optimize/routes", "/v1/optimize/routes", "optimize_service", json_body=True),
    Operation("optimize/stops", "/v1/optimize/stops", "optimize_service", json_body=True),
    Operation("detour/file", "/v1/detour/file", "route_service", json_body=False),
    Operation(
        "geocoder/batch", "/v1/geocoder/batch", "geo_service", json_body=False,
        text_types=(*GEOCODER_BATCH_CSV_TYPES, *GEOCODER_BATCH_JSON_LINES_TYPES),
    ),
)
BY_PATH = {operation.path: operation for operation in OPERATIONS}
BY_NAME = {operation.name: operation for operation in OPERATIONS}


@dataclass(frozen=True)
class StoredRequest:
    """The request as the client sent it to the synchronous operation, minus `async`."""

    operation: str
    content_type: str
    body: bytes
    query: list[tuple[str, str]] = field(default_factory=list)
    disposition: str = ""
    # Priced and charged at submission by its owning service (job_service.replay.Replayer.price):
    # its replay is not charged again.
    paid: int = 0  # the units charged then; 0: unpaid


@dataclass(frozen=True)
class Account:
    """Who submits: the token's subject and tier, as the gateway forwards them."""

    subject: str
    tier: str


@dataclass(frozen=True)
class Job:
    """A job's state, without its request or result bytes."""

    id: str
    owner: str
    operation: str
    status: str
    created: float
    started: float | None = None
    finished: float | None = None
    attempts: int = 0
    error: dict[str, Any] | None = None
    result_type: str = ""
    queue_position: int | None = None


@dataclass(frozen=True)
class Outcome:
    """What the replayed call answered: a result (2xx) or the error to keep."""

    result: bytes | None = None
    result_type: str = "application/json"
    error: dict[str, Any] | None = None


def compress(data: bytes) -> bytes:
    # Level 1: a few MB of detour JSON shrink ~6-10x in tens of milliseconds.
    return zlib.compress(data, 1)


def decompress(data: bytes) -> bytes:
    return zlib.decompress(data)
