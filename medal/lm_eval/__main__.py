"""``python -m medal.lm_eval ...``: lm-eval's command line with the ``medal`` model."""
from . import main

raise SystemExit(main())
