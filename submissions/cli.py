"""``python -m submissions.cli`` of earlier releases: the client now lives in ``expbench_client``
(``python -m expbench_client``); this name keeps old scripts working."""
import sys

from expbench_client.cli import main

if __name__ == "__main__":
    sys.exit(main())
