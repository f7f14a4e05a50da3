"""The house (issue 26): every import, at module level or inside a function, points down
the layers of docs/ARCHITECTURE.md -- so no module imports another in a circle. Read from
the code with ``ast``, as a newcomer's tool would draw it."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "medal"

#: bottom first; a module may import its own layer or any layer below (docs/ARCHITECTURE.md)
LAYERS = [
    ("foundation", ["_version", "errors", "config", "events", "scores", "cost", "memory", "files",
                    "extensions"]),
    ("networks and problems", ["models*", "tasks*"]),
    ("algorithm", ["runner", "decoding", "search"]),
    ("trace", ["provenance", "trace.limits", "trace.recorder", "trace.differences", "trace.toprows",
               "trace.packing", "trace.gate*", "trace.writing", "trace", "timeline"]),
    ("engine", ["engine"]),
    ("analysis", ["candidates", "diff*", "fork", "repro", "bench", "profile", "train",
                  "examples"]),
    ("views", ["views*"]),
    ("viewer", ["viewer*"]),
    ("hosts", ["app*", "cli*", "serving", "lm_eval*", "__main__", "assets*", ""]),
]


def layer_of(module: str) -> int:
    name = module[len("medal."):] if module.startswith("medal.") else ""
    for i, (_, patterns) in enumerate(LAYERS):
        for p in patterns:
            if name == p.rstrip("*") or (p.endswith("*") and name.startswith(p[:-1] + ".")):
                return i
    raise AssertionError(f"{module} is in no layer: add it to docs/ARCHITECTURE.md and here")


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["medal", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports() -> list[tuple[str, str, int, bool]]:
    """(importer, imported, line, inside a function) for every import of a medal module."""
    mods, out = modules(), []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside = {id(n) for f in ast.walk(tree)
                  if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name:
                    out.append((name, t, node.lineno, id(node) in inside))
    return out


def test_every_import_points_down_the_layers():
    up = [f"{a}:{line} imports {b} ({LAYERS[layer_of(a)][0]} -> {LAYERS[layer_of(b)][0]})"
          for a, b, line, _ in imports() if layer_of(b) > layer_of(a)]
    assert not up, "imports that go up a layer:\n" + "\n".join(up)


def test_no_module_imports_another_in_a_circle():
    graph: dict[str, set[str]] = {}
    for a, b, _, _ in imports():
        graph.setdefault(a, set()).add(b)
    seen, on_path, circles = set(), [], []

    def visit(m):
        if m in on_path:
            circles.append(on_path[on_path.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        on_path.append(m)
        for n in sorted(graph.get(m, ())):
            visit(n)
        on_path.pop()

    for m in sorted(graph):
        visit(m)
    # the package root imports the names it hands out; it is no module's dependency
    circles = [c for c in circles if "medal" not in c]
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_layers_cover_every_module():
    for m in modules():
        layer_of(m)


def test_the_fast_tier_names_test_files_that_exist():
    """``python -m pytest -m fast`` (tests/tiers.py): a renamed test file must not fall
    out of the tier unnoticed."""
    from tiers import FAST_MODULES      # the tier's definition (conftest marks it)
    tests = {p.stem for p in Path(__file__).resolve().parents[1].rglob("test_*.py")}
    assert FAST_MODULES and FAST_MODULES <= tests, sorted(FAST_MODULES - tests)


def test_the_tests_are_laid_out_like_the_code():
    """Test files live in a folder per layer (foundation ... views), then app/ (AppTest),
    cli/ (the command line as a user runs it) and browser/ (Chromium); the helper
    modules they share stay at tests/'s top, none is a test file."""
    root = Path(__file__).resolve().parents[1]
    allowed = {"foundation", "networks", "algorithm", "trace", "engine", "analysis", "views",
               "app", "cli", "browser"}
    assert {p.name for p in root.iterdir() if p.is_dir() and any(p.glob("test_*.py"))} \
        == allowed
    for path in root.rglob("test_*.py"):
        assert path.parent.parent == root and path.parent.name in allowed, path


def test_a_test_module_imports_test_modules_of_its_own_folder_only():
    """pytest puts a test file's own folder on sys.path, not its neighbours': a test that
    imports another folder's test module passes in the whole suite (that folder was
    collected first) and fails when its folder runs alone, as CI's transformers 5 lane
    runs tests/cli/test_long_answers.py. What several folders share lives in a helper
    module at tests/'s top (viz_support, scripted, ...)."""
    root = Path(__file__).resolve().parents[1]
    wrong = []
    for path in sorted(root.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top.startswith("test_") and not (path.parent / f"{top}.py").exists():
                    wrong.append(f"{path.relative_to(root)}:{node.lineno} imports {name}")
    assert not wrong, wrong


def test_the_command_lines_help_imports_no_torch():
    """``medal --help`` (and every command's parser) answers without torch, the engine or
    transformers: a command imports what it runs when it runs."""
    import subprocess
    import sys
    code = ("import sys; from medal.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'transformers', 'medal.engine', 'numpy') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PACKAGE.parent, check=True).stdout.strip()
    assert out == "[]", f"the parser imported {out}"


def test_the_views_layer_is_pure():
    """Issue 41 #6: medal/views turns a trace into data and nothing else -- no Streamlit,
    no engine or model, no browser viewer, no host (read from the imports, lazy ones
    included), so every figure is built and tested from a trace alone."""
    banned = ("medal.engine", "medal.runner", "medal.search", "medal.decoding", "medal.models",
              "medal.viewer", "medal.app", "medal.cli", "medal.serving", "medal.fork",
              "medal.repro", "medal.bench")
    bad = [f"{a}:{line} imports {b}" for a, b, line, _ in imports()
           if a.startswith("medal.views") and b.startswith(banned)]
    assert not bad, "\n".join(bad)
    third = []
    for name, path in modules().items():
        if not name.startswith("medal.views"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                    [node.module] if isinstance(node, ast.ImportFrom) and not node.level else [])
            third += [f"{name} imports {m}" for m in mods
                      if m and m.split(".")[0] in ("streamlit", "torch", "transformers")]
    assert not third, "\n".join(third)
