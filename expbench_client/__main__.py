import sys

from expbench_client.cli import main

sys.exit(main())
