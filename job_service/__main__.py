"""`python -m job_service`: runs the service on JOB_SERVICE_HOST:JOB_SERVICE_PORT (8085)."""

from common.service import run
from job_service.app import create_app
from job_service.config import JobConfig

if __name__ == "__main__":
    run(create_app, JobConfig.from_env("job_service"))
