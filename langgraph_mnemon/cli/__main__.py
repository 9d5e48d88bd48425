"""``python -m langgraph_mnemon.cli``: the same as the ``mnemon`` command."""

from langgraph_mnemon.cli._common import main

if __name__ == "__main__":
    main()
