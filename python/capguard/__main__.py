"""python -m capguard ARGS...: the same as the capguard command."""
import sys

from capguard import main

sys.exit(main())
