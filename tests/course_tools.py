"""The course's command-line tools (tools/*.py: scripts, not a package), imported by the tests that test them."""
import importlib
import os
import sys

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")


def tool(name):
    """tools/<name>.py as a module (one module object per process, as `import` gives)."""
    if TOOLS not in sys.path:
        sys.path.insert(0, TOOLS)
    return importlib.import_module(name)
