"""The jobs benchmark's pure parts (bench/jobs.py): its section renders from given numbers,
error codes and the job's own times are read as the job service writes them."""

from __future__ import annotations

from bench.jobs import (
    DetourMap,
    JobRun,
    LimitRun,
    Reply,
    Timings,
    error_code,
    report,
    span,
    too_many_jobs,
    with_async,
)


def job(done_s: float, running_s: float) -> JobRun:
    return JobRun(submit_s=0.02, done_s=done_s, queued_s=0.01, running_s=running_s)


def section(maps: list[DetourMap], skipped: list[str]) -> str:
    stops = Timings([0.5, 0.6], [job(0.7, 0.5), job(0.8, 0.6)], "job results equal to the synchronous answer: yes")
    fleets = Timings([1.4, 1.5, 1.6], [job(1.7, 1.4)] * 3, "routes per job answer: [5]")
    tiers = [LimitRun("demo", 1, 4, 1, 3, ["10"], [], 0, 0.04, True)]
    return report(maps, skipped, stops, fleets, tiers, (8.0, 9.0), 420.0)


def test_the_section_renders_the_numbers_and_the_command() -> None:
    fast = DetourMap("heidelberg", 1_270_000, 19930, 70, [10.0, 11.0, 12.0], [job(11.0, 10.5)] * 3, True)
    slow = DetourMap("helsinki", 1_200_000, 14639, 5361, [20.0, 21.0, 22.0], [job(16.0, 15.5)] * 3, False)
    text = section([fast, slow], ["andorra"])
    assert "Command: `python -m bench jobs`" in text
    assert "| heidelberg | 1.27 MB | 19930 / 70 | 11.00 (10.00-12.00) | 11.00 (11.00-11.00) |" in text
    assert text.count("| yes | yes |") == 1 and "| **no** | **no** |" in text  # 16 s > 15 s, answers differ
    assert "Left out for the time budget: andorra" in text
    assert "| synchronous | 0.550 / 0.599 |" in text
    assert "| added by the job (p50 job - p50 synchronous) | 0.200 |" in text
    assert "| demo | 1 | 4 | 1 | 3 (10 s) | none | 0 | 0.04 | yes |" in text
    assert "Every map named was measured." in section([fast], [])


def test_the_job_limit_is_429_with_its_code_and_retry_after() -> None:
    body = b'{"details": [{"code": "JOB_ERROR_TOO_MANY_JOBS"}]}'
    assert error_code(body) == "JOB_ERROR_TOO_MANY_JOBS"
    assert error_code(b"not json") == "" and error_code(b"[]") == "" and error_code(b"{}") == ""
    assert too_many_jobs(Reply(429, {"retry-after": "10"}, body, 0.01))
    assert not too_many_jobs(Reply(429, {}, body, 0.01))  # no Retry-After: not as documented
    assert not too_many_jobs(Reply(429, {"retry-after": "1"}, b'{"details": [{"code": "RATE_LIMITED"}]}', 0.01))


def test_job_times_and_paths() -> None:
    assert span("2026-11-25T19:00:00.000Z", "2026-11-25T19:00:11.250Z") == 11.25
    assert with_async("/v1/optimize/routes") == "/v1/optimize/routes?async=true"
    assert with_async("/v1/detour/file?filename=a.csv") == "/v1/detour/file?filename=a.csv&async=true"
