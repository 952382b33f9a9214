"""Stop order (`POST /v1/optimize/stops`): one vehicle's stops in the shortest order, exact for
small sets, two heuristic searches at once for the rest, in the service's solver processes."""
