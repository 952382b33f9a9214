"""The routing words of the API, shared by every service and by the published spec.

A route, a matrix, a detour file and a stop-order request all name a vehicle and a route
type from these lists; the gateway writes them into the OpenAPI document (`gateway.docs`), so
the spec cannot drift from what the services accept. Which of them a dataset actually serves
is the providers' business (`/v1/providers`).
"""

from __future__ import annotations

from common.vehicles import VEHICLE_TABLE

VEHICLES = tuple(VEHICLE_TABLE)  # the vehicle table (common.vehicles) is their one definition
ROUTE_TYPES = ("fastest", "shortest")
DEFAULT_VEHICLE = "car"
DEFAULT_ROUTE_TYPE = "fastest"

# The media types a geocoder batch may be sent as (POST /v1/geocoder/batch): CSV, or one JSON
# object per line under the names JSON-lines writers use. The geocoder reads them, the job
# service accepts them for `?async=true`, the spec lists them.
# The languages the platform reads and answers in: every shared extract's and its neighbours'.
# The geocoder's kinds of places (iD's presets) and names of other languages (name:<lang>) use them.
LANGUAGES = ("en", "de", "fr", "fi", "sv", "ca", "es", "it", "nl", "pt", "pl", "cs", "da", "nb")
# The languages of turn instructions (issue 35): the translation files of the pinned
# osrm-text-instructions (gateway.vendor; route_service.instructions renders them), in its
# order; a test checks the list against the files installed. And the units of spoken distances.
INSTRUCTION_LANGUAGES = (
    "ar", "ca", "da", "de", "en", "eo", "es", "es-ES", "fi", "fr", "he", "hu", "id", "it", "ja", "ko",
    "my", "nl", "no", "pl", "pt-BR", "pt-PT", "ro", "ru", "sl", "sv", "tr", "uk", "vi", "yo", "zh-Hans",
)  # fmt: skip
UNITS = ("metric", "imperial")
DEFAULT_UNITS = "metric"
GEOCODER_BATCH_CSV_TYPES = ("text/csv", "text/plain")
GEOCODER_BATCH_JSON_LINES_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
