import sys

from .embedded import main

sys.exit(main())
