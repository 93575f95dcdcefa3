import sys

from cetql.surfaces.cli.launch import main

sys.exit(main())
