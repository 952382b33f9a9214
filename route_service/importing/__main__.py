import sys

from route_service.importing.importer import MapImporter

sys.exit(MapImporter().main())
