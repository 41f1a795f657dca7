"""``python -m attnseq.cli ...`` (and ``torchrun -m attnseq.cli ...``): the ``attnseq`` command."""

import sys

from . import main

sys.exit(main())
