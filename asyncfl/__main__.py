import sys

from asyncfl.cli import main

sys.exit(main())
