"""The job service: large requests as asynchronous jobs (docs/decisions.md, "Asynchronous jobs")."""
