"""The optimize service (port 8084): two products in their own packages, stop order
(`stops/`, POST /v1/optimize/stops) and fleet routing (`fleet/`, POST /v1/optimize/routes),
sharing the app, handlers, pricing (`costs`), the solver lanes (`scheduler`) and the route
service's client (`routing`)."""
