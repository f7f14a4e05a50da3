"""The project as a package: every import declared, requirements.txt agreeing with
pyproject.toml, the version in one place, the API at the top level, and a wheel that works
outside the repository (installed into a fresh virtual environment, run from another
directory: the command line, ``import medal`` and ``medal app``)."""
from __future__ import annotations

import ast
import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from work import HANG, wait_for_server

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def _name(requirement: str) -> str:
    return Requirement(requirement).name.lower().replace("_", "-")


def declared() -> dict[str, Requirement]:
    """Every distribution pyproject.toml declares (base and every extra) -> requirement."""
    out = {}
    for text in PROJECT["dependencies"] + [r for extra in PROJECT["optional-dependencies"].values()
                                           for r in extra]:
        req = Requirement(text)
        if req.name != PROJECT["name"]:  # the test extra names the project's own extras
            out[_name(text)] = req
    return out


# ------------------------------------------------------------------ imports declared

def _local_modules() -> set[str]:
    names = {"medal", "conftest"}
    for folder in ("tests", "scripts", "pages"):
        names |= {p.stem for p in (ROOT / folder).rglob("*.py")}
        # a folder of modules there (scripts/results_doc/, the parts of one script)
        names |= {p.parent.name for p in (ROOT / folder).rglob("__init__.py")}
    names |= {p.stem for p in ROOT.glob("*.py")}
    return names


def third_party_imports(folders=("medal", "tests", "scripts")) -> dict[str, set[str]]:
    """Top-level module names imported (at any depth of the code) -> the files importing
    them; the standard library and the project's own modules left out. The stand-in model
    code in tests/standin_code plays the checkpoints' remote code and imports what theirs
    does (transformers), like every other file."""
    std = set(sys.stdlib_module_names)
    local = _local_modules()
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module]
                else:
                    continue
                for m in mods:
                    top = m.split(".")[0]
                    if top not in std and top not in local:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_declared():
    """A module the package, the tests or the scripts import must come from a distribution
    pyproject.toml declares: a fresh machine has only what the project installs."""
    dists = metadata.packages_distributions()
    names = declared()
    missing = []
    for module, files in sorted(third_party_imports().items()):
        providers = {d.lower().replace("_", "-") for d in dists.get(module, [])}
        if not providers & set(names):
            missing.append(f"{module} (imported by {', '.join(sorted(files)[:3])}; provided by "
                           f"{', '.join(sorted(providers)) or 'nothing installed'})")
    assert not missing, "undeclared imports:\n" + "\n".join(missing)


def test_the_check_sees_an_undeclared_import(tmp_path, monkeypatch):
    """The check above can fail: a file importing a module nobody declares is reported."""
    fake = tmp_path / "medal"
    fake.mkdir()
    (fake / "x.py").write_text("import yaml\nfrom somewhere_else.sub import thing\nimport json\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "pages").mkdir()
    found = third_party_imports()
    assert set(found) == {"yaml", "somewhere_else"}


# ------------------------------------------------------------------ requirements.txt

def requirement_lines() -> list[str]:
    lines = []
    for raw in (ROOT / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


def test_requirements_txt_agrees_with_pyproject():
    """requirements.txt is the README's one-command install: the project itself (so
    pyproject.toml is the one list of dependencies), plus exact pins that pyproject's
    ranges allow."""
    lines = requirement_lines()
    editable = [ln for ln in lines if ln.startswith("-e")]
    assert len(editable) == 1, "requirements.txt installs the project itself once (-e .[...])"
    match = re.fullmatch(r"-e\s+\.(?:\[([\w,\s-]+)\])?", editable[0])
    assert match, editable[0]
    extras = [e.strip() for e in (match.group(1) or "").split(",") if e.strip()]
    assert set(extras) <= set(PROJECT["optional-dependencies"]), extras
    names = declared()
    for line in lines:
        if line.startswith("-"):
            continue
        req = Requirement(line)
        name = _name(line)
        assert name in names, f"requirements.txt pins {name}, which pyproject.toml does not declare"
        pins = [s for s in req.specifier if s.operator == "=="]
        assert pins, f"{line}: requirements.txt only adds exact pins"
        assert names[name].specifier.contains(Version(pins[0].version)), (
            f"{line} is outside pyproject.toml's {names[name]}")


def test_the_version_is_written_once():
    import medal
    from medal import _version
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "medal._version.__version__"}
    assert medal.__version__ == _version.__version__
    hits = [p for p in (ROOT / "medal").rglob("*.py")
            if re.search(r"__version__\s*=\s*['\"]", p.read_text())]
    assert [p.name for p in hits] == ["_version.py"]
    try:
        assert metadata.version("medal-explorer") == medal.__version__
    except metadata.PackageNotFoundError:
        pass  # run from a checkout that is not installed


def test_streamlit_options_match_the_checkout_config():
    """``medal app`` passes the same options the checkout's .streamlit/config.toml sets."""
    from medal.serving import STREAMLIT_OPTIONS
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    flat = {f"{section}.{k}": v for section, values in config.items() for k, v in values.items()}
    assert {k: str(v).lower() for k, v in flat.items()} == {
        k: str(v).lower() for k, v in STREAMLIT_OPTIONS.items()}


# ------------------------------------------------------------------ the API

def test_the_top_level_api():
    import medal
    for name in ("load_model", "generate", "Run", "load_trace", "loads_trace", "STRATEGIES",
                 "GenerationConfig"):
        assert name in dir(medal) and getattr(medal, name) is not None
    assert "medal" in medal.STRATEGIES and "greedy" in medal.STRATEGIES
    text = medal.__doc__
    assert "Where to start" in text and "medal.load_model" in text and "medal app" in text
    model = medal.load_model("builtin:countdown")
    problem = {"numbers": [4, 18, 13], "target": 20}
    greedy = medal.generate(model, problem=problem, strategy="greedy")
    run = medal.Run(model, problem=problem, strategy="greedy")
    kinds = []
    while (event := run.step()) is not None:
        kinds.append(event.kind)
    assert run.result.answer_ids == greedy.answer_ids
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("decode_step") == greedy.forwards
    traced = medal.generate("builtin:countdown", problem=problem, strategy="medal", lc=1,
                            trace=True)
    assert traced.trace["run"]["config"]["lc"] == 1
    assert medal.loads_trace(__import__("json").dumps(traced.trace))["result"]["answer"] == \
        traced.answer
    with pytest.raises(medal.errors.InputError, match="unknown setting"):
        medal.generate(model, problem=problem, k3=1)


def test_help_tells_a_newcomer_where_to_start():
    out = subprocess.run([sys.executable, "-c", "import medal; help(medal)"],
                         capture_output=True, text=True, env={**os.environ, "PAGER": "cat"},
                         cwd=ROOT, timeout=HANG)
    assert out.returncode == 0, out.stderr
    assert "Where to start" in out.stdout and "load_model" in out.stdout


def test_the_readme_python_example_runs(tmp_path):
    """The README's Python example, as written."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README has a Python example"
    out = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True,
                         cwd=tmp_path, timeout=HANG,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip()


# ------------------------------------------------------------------ the wheel

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # build from a copy of the files git tracks: a build leaves build/ and *.egg-info behind
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(out), str(source)], capture_output=True, text=True, timeout=HANG)
    assert build.returncode == 0, build.stderr[-3000:]
    (path,) = out.glob("medal_explorer-*.whl")
    return path


def test_the_wheel_holds_the_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("medal/assets/countdown/model.safetensors", "medal/assets/countdown/config.json",
                   "medal/assets/sudoku/model.safetensors", "medal/assets/pick/model.safetensors",
                   "medal/assets/examples/index.json",
                   "medal/trace.schema.json", "medal/app/main.py", "medal/app/pages/run.py",
                   "medal/app/pages/benchmark.py", "medal/app/pages/how_medal_works.py"):
        assert needed in names, f"{needed} is not in the wheel"
    assert not any(n.startswith(("tests/", "scripts/")) for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "medal = medal.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_wheel_installs_and_runs_outside_the_repository(wheel, tmp_path):
    """A fresh venv, the wheel and its dependencies (torch pinned as the README pins it),
    then from a directory with nothing in it: the command line, the import, and
    ``medal app`` until its health endpoint answers."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=HANG)
    py = venv / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-compile",
                              "--disable-pip-version-check", "torch==2.13.0", str(wheel)],
                             capture_output=True, text=True, timeout=HANG)
    assert install.returncode == 0, install.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    medal_cmd = str(venv / "bin" / "medal")
    gen = subprocess.run([medal_cmd, "generate", "--model", "builtin:countdown", "--problem",
                          '{"numbers": [4, 18, 13], "target": 20}', "--strategy", "medal",
                          "--json"], capture_output=True, text=True, cwd=elsewhere, env=env,
                         timeout=HANG)
    assert gen.returncode == 0, gen.stderr[-2000:]
    assert '"answer"' in gen.stdout
    imp = subprocess.run([str(py), "-c", "import medal, medal.models; print(medal.__file__); "
                          "print(medal.models.builtin_names())"],
                         capture_output=True, text=True, cwd=elsewhere, env=env, timeout=HANG)
    assert imp.returncode == 0, imp.stderr
    # every built-in model of the checkout ships in the wheel and is found from it
    import medal.models
    assert str(venv) in imp.stdout and str(medal.models.builtin_names()) in imp.stdout
    # the app's pages run from the installed package (Streamlit's own test harness)
    page = subprocess.run([str(py), "-c",
                           "from streamlit.testing.v1 import AppTest; import medal.app as a; "
                           "t = AppTest.from_file(str(a.MAIN), default_timeout=3600); t.run(); "
                           "assert not t.exception, t.exception; "
                           "print([b.label for b in t.button][:3], a.MAIN)"],
                          capture_output=True, text=True, cwd=elsewhere, env=env, timeout=HANG)
    assert page.returncode == 0, page.stderr[-2000:]
    assert str(venv) in page.stdout
    port = _free_port()
    server = subprocess.Popen([medal_cmd, "app", "--port", str(port)], cwd=elsewhere, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        try:      # waits on the server, not on a clock (tests/work.py)
            answer = wait_for_server(server, f"http://127.0.0.1:{port}/_stcore/health")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {server.stderr.read() if server.poll() else ''}")
        assert answer == "ok"
        # the page itself is served from the package, not from a checkout
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=HANG) as r:
            assert r.status == 200
    finally:
        server.terminate()
        try:
            server.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            server.kill()
