"""Infrastructure every layer uses: durable file commits, the SQL engine and migrations, git.

- :mod:`langgraph_mnemon.storage.files`: temp → fsync → rename, locks, no-follow checks.
- :mod:`langgraph_mnemon.storage.db`: SQLAlchemy engines, versioned migrations, ``Database``.
- :mod:`langgraph_mnemon.storage.git`: the checked-out branch and the work tree's changes.

Nothing here knows a memory layer; the layers import it, never the reverse.
"""

__all__: list[str] = []
