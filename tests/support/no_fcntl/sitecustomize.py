"""Python without ``fcntl``, as on Windows: every interpreter with this folder on PYTHONPATH.

Python imports ``sitecustomize`` at start-up, before any program code: a ``None`` entry in
``sys.modules`` makes ``import fcntl`` raise ``ImportError`` from then on, in this process and
(through the inherited PYTHONPATH) in every Python process it starts.
"""

import sys

sys.modules["fcntl"] = None  # type: ignore[assignment]
