"""The typed API errors: status, problem type, title and stable code of every error a client
can get, and `ParameterErrors`, which collects violations to report them all at once.

Every service raises these and no handler formats an error body: `common.problems` writes
them in the caller's format, from the `errors` middleware (`common.middleware`) or, for what
the HTTP parser refuses, from `common.http_server`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self


@dataclass(frozen=True)
class Violation:
    """One broken constraint: which parameter, what is wrong, and the stable code."""

    parameter: str | None
    message: str
    code: str = "ERROR_INVALID_PARAMETER"
    type: str = "/problems/general/invalid-parameter/"

    def __post_init__(self) -> None:
        # "; " separates one violation from the next in a problem's `detail` (the contract):
        # inside a message it would read as two.
        if "; " in self.message:
            object.__setattr__(self, "message", self.message.replace("; ", ", "))

    def text(self) -> str:
        return f"{self.parameter}: {self.message}" if self.parameter else self.message


class ApiError(Exception):
    """Base of every error that reaches a client. Subclasses fix status, type, title, code."""

    status: int = 500
    type: str = "/problems/general/internal-error"
    title: str = "Internal server error"
    code: str = "ERROR_INTERNAL"

    def __init__(
        self,
        message: str | None = None,
        *,
        parameter: str | None = None,
        violations: list[Violation] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if violations is None:
            violations = [Violation(parameter, message or self.title, self.code, self.type)]
        self.violations = violations
        self.headers = dict(headers or {})
        super().__init__("; ".join(v.text() for v in violations))

    @property
    def detail(self) -> str:
        return "; ".join(v.text() for v in self.violations)

    def renamed(self, rename: Callable[[Violation], Violation]) -> Self:
        """The same error (class, status, headers) with each violation passed through `rename`:
        a caller naming its own inputs in a callee's error (a leg's `from` as `waypoints[3]`,
        the route service's `sources[3]` as `stops[3]`). The one place an error is renamed;
        copied, not rebuilt, because not every error type takes `violations=` (UpstreamError)."""
        copy = type(self).__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.violations = [rename(v) for v in self.violations]
        copy.args = (copy.detail,)
        return copy


class InvalidParameter(ApiError):
    status = 400
    type = "/problems/general/invalid-parameter/"
    title = "Some parameters have invalid values"
    code = "ERROR_INVALID_PARAMETER"


class MissingAddress(ApiError):
    status = 400
    type = "/problems/geocoder/missing-address"
    title = "The address is missing"
    code = "GEOCODER_ERROR_MISSING_ADDRESS"


class InvalidFilename(ApiError):
    status = 400
    type = "/problems/detour/invalid-filename"
    title = "The file name is invalid"
    code = "DETOUR_ERROR_INVALID_FILENAME"


class MalformedBody(ApiError):
    status = 400
    type = "/problems/general/malformed-body"
    title = "The request body cannot be read"
    code = "ERROR_MALFORMED_BODY"


class MalformedRequest(ApiError):
    """What the HTTP parser refuses before any handler runs: a request line or header over
    the size limit, an invalid method, a bad Content-Length. The message names the class of
    fault and never repeats the request's bytes."""

    status = 400
    type = "/problems/general/malformed-request"
    title = "The request is not valid HTTP"
    code = "ERROR_MALFORMED_REQUEST"


class Unauthorized(ApiError):
    status = 401
    type = "/problems/general/unauthorized"
    title = "Authentication is required"
    code = "ERROR_UNAUTHORIZED"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        headers = {"WWW-Authenticate": 'Bearer realm="api"', **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


class InvalidCredentials(Unauthorized):
    type = "/problems/auth/invalid-credentials"
    title = "Invalid credentials"
    code = "AUTH_ERROR_INVALID_CREDENTIALS"


class InternalCredentialRequired(Unauthorized):
    """A call to a service's own port without the platform's internal credential, or with a
    wrong one. Its own `WWW-Authenticate` scheme lets a calling service tell this refusal
    (our misconfiguration) from a user's 401, which it passes on."""

    type = "/problems/general/internal-credential-required"
    title = "This port serves only the platform's own services"
    code = "ERROR_INTERNAL_CREDENTIAL_REQUIRED"
    scheme = "Internal-Token"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        headers = {"WWW-Authenticate": f'{self.scheme} realm="internal"', **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


class Forbidden(ApiError):
    status = 403
    type = "/problems/general/forbidden"
    title = "Access is forbidden"
    code = "ERROR_FORBIDDEN"


class NotFound(ApiError):
    status = 404
    type = "/problems/general/not-found"
    title = "Resource not found"
    code = "ERROR_NOT_FOUND"


class Conflict(ApiError):
    """The request contradicts what exists: a user with that e-mail address, for instance."""

    status = 409
    type = "/problems/general/conflict"
    title = "The request conflicts with the current state"
    code = "ERROR_CONFLICT"


class MethodNotAllowed(ApiError):
    status = 405
    type = "/problems/general/method-not-allowed"
    title = "Method not allowed"
    code = "ERROR_METHOD_NOT_ALLOWED"

    def __init__(self, method: str, allowed: list[str]) -> None:
        allow = ", ".join(sorted(set(allowed)))
        super().__init__(f"{method} is not allowed here; allowed: {allow}", headers={"Allow": allow})


class RequestTimeout(ApiError):
    """The client stopped sending: headers or body incomplete after the read timeout."""

    status = 408
    type = "/problems/general/request-timeout"
    title = "The request was not received in time"
    code = "ERROR_REQUEST_TIMEOUT"


class PayloadTooLarge(ApiError):
    status = 413
    type = "/problems/general/payload-too-large"
    title = "The request body is too large"
    code = "ERROR_PAYLOAD_TOO_LARGE"


class DiameterTooLarge(ApiError):
    status = 413
    type = "/problems/optimize/diameter-too-large"
    title = "The stops lie in a region that is too large"
    code = "OPTIMIZE_ERROR_DIAMETER_TOO_LARGE"


class UnsupportedMediaType(ApiError):
    status = 415
    type = "/problems/general/unsupported-media-type"
    title = "Unsupported media type"
    code = "ERROR_UNSUPPORTED_MEDIA_TYPE"


class TooManyRequests(ApiError):
    status = 429
    type = "/problems/general/too-many-requests"
    title = "Too many requests"
    code = "ERROR_TOO_MANY_REQUESTS"


class CostLimitExceeded(TooManyRequests):
    """The account's budget of work units (common.admission) cannot pay for this request now:
    `Retry-After` says when it will."""

    type = "/problems/general/cost-limit-exceeded"
    title = "The account's work budget is spent"
    code = "ERROR_COST_LIMIT_EXCEEDED"


class TooManyConcurrent(TooManyRequests):
    """The account already runs as many heavy requests at once as its tier allows."""

    type = "/problems/general/too-many-concurrent"
    title = "Too many heavy requests at once"
    code = "ERROR_TOO_MANY_CONCURRENT"


class CostTooHigh(ApiError):
    """One request would cost more work units than its tier allows any single request."""

    status = 413
    type = "/problems/general/cost-too-high"
    title = "The request costs more than the tier allows"
    code = "ERROR_COST_TOO_HIGH"


class InternalError(ApiError):
    """The default 500: the details stay in the log, never in the body."""


class BadGateway(ApiError):
    status = 502
    type = "/problems/general/bad-gateway"
    title = "An upstream service answered badly"
    code = "ERROR_BAD_GATEWAY"


class ServiceUnavailable(ApiError):
    status = 503
    type = "/problems/general/service-unavailable"
    title = "The service is unavailable"
    code = "ERROR_SERVICE_UNAVAILABLE"


class GatewayTimeout(ApiError):
    status = 504
    type = "/problems/general/gateway-timeout"
    title = "An upstream service did not answer in time"
    code = "ERROR_GATEWAY_TIMEOUT"


def all_error_classes() -> list[type[ApiError]]:
    """Every error type the platform defines (for the docs and their test)."""
    seen: list[type[ApiError]] = []
    stack: list[type[ApiError]] = [ApiError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen


class ParameterErrors:
    """Collects violations so one response can report every broken constraint."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self._first_error: type[ApiError] | None = None

    def add(self, parameter: str | None, message: str, error: type[ApiError] = InvalidParameter) -> None:
        self.violations.append(Violation(parameter, message, error.code, error.type))
        if self._first_error is None:
            self._first_error = error

    def __bool__(self) -> bool:
        return bool(self.violations)

    def raise_if_any(self) -> None:
        if self._first_error is not None:
            raise self._first_error(violations=self.violations)


_BY_STATUS: dict[int, type[ApiError]] = {
    400: MalformedBody,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    408: RequestTimeout,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    429: TooManyRequests,
    500: InternalError,
    502: BadGateway,
    503: ServiceUnavailable,
    504: GatewayTimeout,
}


def error_for_status(status: int) -> type[ApiError]:
    """Our type for a bare HTTP status (aiohttp's own refusals, a server fault)."""
    return _BY_STATUS.get(status, InternalError if status >= 500 else MalformedBody)


class UpstreamError(ApiError):
    """An error answered by another of our services, carried through unchanged
    (`common.problems.read_internal_body` rebuilds it from the answer)."""

    def __init__(self, status: int, title: str, violations: list[Violation]) -> None:
        self.status = status
        self.title = title
        if violations:
            self.type = violations[0].type
            self.code = violations[0].code
        super().__init__(violations=violations or None)


# ---------------------------------------------------------------- capability errors


class PointNotRoutable(ApiError):
    """A coordinate with no road for the vehicle within the snapping radius."""

    status = 400
    type = "/problems/route/point-not-routable"
    title = "A point is too far from any road"
    code = "ROUTE_ERROR_POINT_NOT_ROUTABLE"


class NoRouteFound(ApiError):
    """Both points are on roads, but no road connects them (different connected parts)."""

    status = 400
    type = "/problems/route/no-route"
    title = "No route connects the points"
    code = "ROUTE_ERROR_NO_ROUTE"


class TraceTooLong(PayloadTooLarge):
    """More GPS points than one /v1/match request takes. Defined here, not in the route
    service, so the gateway's error catalogue (/v1/openapi.json `x-errors`) lists it."""

    type = "/problems/route/trace-too-long"
    title = "The trace has too many points"
    code = "ROUTE_ERROR_TRACE_TOO_LONG"


class MatrixTooLarge(ApiError):
    """More cells (sources x destinations) than the caller's tier may ask in one matrix."""

    status = 413
    type = "/problems/route/matrix-too-large"
    title = "The matrix has too many cells"
    code = "ROUTE_ERROR_MATRIX_TOO_LARGE"


class DatasetNotReady(ApiError):
    status = 503
    type = "/problems/route/dataset-not-ready"
    title = "The map data is not loaded"
    code = "ROUTE_ERROR_DATASET_NOT_READY"


class GeocoderDatasetNotReady(DatasetNotReady):
    """The geocoding service runs but has no imported index to answer from."""

    type = "/problems/geocoder/dataset-not-ready"
    title = "The geocoding index is not loaded"
    code = "GEOCODER_ERROR_DATASET_NOT_READY"


# ---------------------------------------------------------------- detour files


class DetourFileTooLarge(ApiError):
    """More bytes or more data lines than the detour endpoint reads (its own limits)."""

    status = 413
    type = "/problems/detour/file-too-large"
    title = "The detour file is too large"
    code = "DETOUR_ERROR_FILE_TOO_LARGE"


class DetourEmptyFile(ApiError):
    status = 400
    type = "/problems/detour/empty-file"
    title = "The detour file has no data lines"
    code = "DETOUR_ERROR_EMPTY_FILE"


class DetourInvalidHeader(ApiError):
    status = 400
    type = "/problems/detour/invalid-header"
    title = "The detour file's header names no known file kind"
    code = "DETOUR_ERROR_INVALID_HEADER"


class DetourInvalidEncoding(ApiError):
    status = 400
    type = "/problems/detour/invalid-encoding"
    title = "The detour file is not UTF-8 text"
    code = "DETOUR_ERROR_INVALID_ENCODING"


# ---------------------------------------------------------------- geocoder batches


class BatchTooLarge(ApiError):
    """More bytes or lines than a geocoder batch may have (synchronous, or as a job)."""

    status = 413
    type = "/problems/geocoder/batch-too-large"
    title = "The geocoder batch is too large"
    code = "GEOCODER_ERROR_BATCH_TOO_LARGE"


class BatchWorkSpent(ApiError):
    """A batch line not looked up: the lines before it used all the work one request may cost."""

    status = 413
    type = "/problems/geocoder/batch-work-spent"
    title = "The batch used all the work one request may cost"
    code = "GEOCODER_ERROR_BATCH_WORK_SPENT"


class BatchEmpty(ApiError):
    status = 400
    type = "/problems/geocoder/empty-batch"
    title = "The geocoder batch has no data lines"
    code = "GEOCODER_ERROR_EMPTY_BATCH"


class BatchInvalidHeader(ApiError):
    status = 400
    type = "/problems/geocoder/invalid-batch-header"
    title = "The geocoder batch's CSV header names unknown columns"
    code = "GEOCODER_ERROR_INVALID_BATCH_HEADER"


class TooManyStops(ApiError):
    """More stops in one optimization request than the documented maximum."""

    status = 413
    type = "/problems/optimize/too-many-stops"
    title = "Too many stops"
    code = "OPTIMIZE_ERROR_TOO_MANY_STOPS"


class OptimizerBusy(ApiError):
    """The optimizer's queue for this size of problem is full: try again after `Retry-After`
    seconds (an estimate of when the work ahead leaves room), rather than wait past the
    gateway's timeout."""

    status = 503
    type = "/problems/optimize/busy"
    title = "The optimizer is busy"
    code = "OPTIMIZE_ERROR_BUSY"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, retry_after_s)), **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)
        self.retry_after_s = max(1, retry_after_s)


# ---------------------------------------------------------------- asynchronous jobs


class TooManyJobs(TooManyRequests):
    """The account already has as many jobs queued or running as its tier allows
    (`common.tiers`): one must finish, or be cancelled, first."""

    type = "/problems/jobs/too-many-jobs"
    title = "Too many jobs at once"
    code = "JOB_ERROR_TOO_MANY_JOBS"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, retry_after_s)), **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


class JobQuotaExceeded(TooManyRequests):
    """The account's jobs already hold as many bytes of the job store (requests and results,
    compressed) as its tier allows: delete finished ones, or wait for them to expire. Also a
    job's error when its result would not fit."""

    type = "/problems/jobs/quota-exceeded"
    title = "The account's job storage is full"
    code = "JOB_ERROR_QUOTA_EXCEEDED"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 60, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, retry_after_s)), **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


class TooManyResultReads(TooManyRequests):
    """The account already reads as many job results at once as its tier allows (each is a
    stream of up to tens of MB): one must end first."""

    type = "/problems/jobs/too-many-result-reads"
    title = "Too many job results read at once"
    code = "JOB_ERROR_TOO_MANY_RESULT_READS"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 5, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, retry_after_s)), **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


class JobResultTooLarge(ApiError):
    """A job's error: its operation answered more bytes than a job's result may keep."""

    status = 413
    type = "/problems/jobs/result-too-large"
    title = "The job's result is too large to keep"
    code = "JOB_ERROR_RESULT_TOO_LARGE"


class JobStoreFull(ServiceUnavailable):
    """The state Redis has no room for another job's request and result (it must never fill:
    rate limits and revocations live there too): try again once older results have expired."""

    type = "/problems/jobs/store-full"
    title = "No room for another job"
    code = "JOB_ERROR_STORE_FULL"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 60, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, retry_after_s)), **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


# ---------------------------------------------------------------- logins and API keys


class LoginBusy(ServiceUnavailable):
    """Every password-hashing slot of the auth service is taken and its short queue is full:
    refused at once with `Retry-After`, rather than queued past the gateway's timeout."""

    type = "/problems/auth/busy"
    title = "Too many logins at once"
    code = "AUTH_ERROR_BUSY"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, retry_after_s)), **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


class TooManyFailedLogins(TooManyRequests):
    """The account's recent failed logins (from any address) put it in a short back-off:
    no password is checked for it until `Retry-After` seconds have passed."""

    type = "/problems/auth/too-many-failed-logins"
    title = "Too many failed logins for this account"
    code = "AUTH_ERROR_TOO_MANY_FAILED_LOGINS"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, retry_after_s)), **kwargs.pop("headers", {})}
        super().__init__(message, headers=headers, **kwargs)


class TooManyApiKeys(Conflict):
    """The account has as many active API keys as one account may: revoke one first."""

    type = "/problems/auth/too-many-api-keys"
    title = "The account has as many API keys as it may"
    code = "AUTH_ERROR_TOO_MANY_API_KEYS"
