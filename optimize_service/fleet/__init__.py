"""Fleet routing (`POST /v1/optimize/routes`): vehicles, jobs and shipments planned by a
portfolio of VROOM and PyVRP searches in the optimize service's solver processes."""
