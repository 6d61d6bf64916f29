"""The library's layers (CONTRIBUTING.md, "Layers"): a module of utils/ imports from its own layer or the ones
below it, never from a layer above, function-local imports included."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# bottom to top; the modules at utils/'s top level (__init__, setup, files) are the ground every layer stands on
LAYERS = ["setup", "tasks", "verifiers", "models", "eval", "rl", "runs", "notebook"]


def layer(module):
    """The layer index of a dotted module name under utils ('utils', 'utils.setup' -> 0), or None outside it."""
    parts = module.split(".")
    if parts[0] != "utils":
        return None
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else 0


def imports(source):
    """Every (line, module) that `source` imports from utils, at any depth; `from utils import x` counts as
    utils.x."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "utils"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "utils":
            names = [f"utils.{a.name}" for a in node.names] if node.module == "utils" else [node.module]
            out += [(node.lineno, m) for m in names]
    return out


def upward(path, source):
    """The imports of the module at `path` (relative to the repo) that point to a higher layer, as messages."""
    me = layer(".".join(Path(path).with_suffix("").parts))
    return [f"{path}:{line} imports {m} ({LAYERS[layer(m)]}, above {LAYERS[me]})"
            for line, m in imports(source) if layer(m) is not None and layer(m) > me]


def test_the_checker_catches_an_upward_import():
    assert upward("utils/tasks/x.py", "def f():\n    from utils.eval.metrics import evaluate\n") == \
        ["utils/tasks/x.py:2 imports utils.eval.metrics (eval, above tasks)"]
    assert upward("utils/models/x.py", "from utils import rl\nimport utils.notebook.plots\n") == \
        ["utils/models/x.py:1 imports utils.rl (rl, above models)",
         "utils/models/x.py:2 imports utils.notebook.plots (notebook, above models)"]
    assert upward("utils/rl/x.py", "from utils.eval import metrics\nfrom utils import DATA_DIR\nimport torch\n") == []


@pytest.mark.parametrize("layer_name", LAYERS)
def test_every_utils_package_is_a_layer(layer_name):
    assert (ROOT / "utils" / layer_name).is_dir() or (ROOT / "utils" / f"{layer_name}.py").is_file()


def test_no_module_imports_from_a_layer_above_it():
    packages = {p.name for p in (ROOT / "utils").iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert packages <= set(LAYERS), f"utils/ has packages with no place in LAYERS: {packages - set(LAYERS)}"
    bad = [msg for f in sorted((ROOT / "utils").rglob("*.py"))
           for msg in upward(f.relative_to(ROOT).as_posix(), f.read_text())]
    assert not bad, "imports against the layers (CONTRIBUTING.md):\n" + "\n".join(bad)
