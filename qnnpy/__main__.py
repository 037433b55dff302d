"""``python -m qnnpy``: the qnnpy command line (see :mod:`qnnpy.cli`)."""
from qnnpy.cli import main

raise SystemExit(main())
