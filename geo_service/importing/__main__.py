import sys

from geo_service.importing.importer import IndexImporter

sys.exit(IndexImporter().main())
