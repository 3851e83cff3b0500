"""The layers import one way: client <- batch <- notebook; the sandbox and the protocol stand alone.

Beneath every layer lie the protocol (the spec's rules, no machinery), the runtime (time, TLS) and the
media formats: each imports nothing of the package but itself and the protocol, so any layer may use them.

Read from the source (every import, also the lazy ones inside functions), so a shortcut across a
layer fails here rather than in a user's notebook without pandas, or in a sandbox run on its own.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mediagen_nb"

# layer -> what it must never import (module prefixes)
FORBIDDEN = {
    "protocol": ("httpx", "pandas", "IPython", "ipywidgets"),
    "runtime": ("httpx", "pandas", "IPython", "ipywidgets"),
    "media_formats.py": ("httpx", "pandas", "IPython", "ipywidgets"),
    "sandbox": (
        "mediagen_nb.client",
        "mediagen_nb.batch",
        "mediagen_nb.notebook",
        "mediagen_nb.doctor",
        "mediagen_nb.cli",
        "mediagen_nb.commands",
        "pandas",
        "IPython",
        "ipywidgets",
    ),
    "client": (
        "mediagen_nb.batch",
        "mediagen_nb.notebook",
        "mediagen_nb.sandbox",
        "pandas",
        "IPython",
        "ipywidgets",
    ),
    "batch": ("mediagen_nb.notebook", "IPython", "ipywidgets"),
}


def imports(module: Path) -> list[tuple[int, str]]:
    """Every module name ``module`` imports, with its line (relative imports resolved)."""
    package = ".".join(module.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def modules_of(layer: str) -> list[Path]:
    """The modules of ``layer``: a package's, or one module's own."""
    where = PACKAGE / layer
    return [where] if where.is_file() else sorted(where.rglob("*.py"))


def crossings(layer: str) -> list[str]:
    """Every import in ``layer`` of what it must never import (the client starts the embedded sandbox
    through the launcher the top layer registers, so it has no allowed crossing either)."""
    bad = []
    for module in modules_of(layer):
        for line, name in imports(module):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[layer]):
                bad.append(f"{module.relative_to(PACKAGE.parent)}:{line} imports {name}")
    return bad


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_only_what_lies_below_it(layer: str) -> None:
    assert crossings(layer) == []


# What lies beneath the layers -> the only parts of the package it may import: itself and the rules.
BENEATH = {
    "protocol": ("mediagen_nb.protocol",),
    "runtime": ("mediagen_nb.runtime",),
    "media_formats.py": ("mediagen_nb.protocol",),
}


@pytest.mark.parametrize("part", sorted(BENEATH))
def test_what_lies_beneath_the_layers_imports_none_of_them(part: str) -> None:
    """So every layer may import it, the sandbox too, without reaching the client through it."""
    allowed = (*BENEATH[part], f"mediagen_nb.{part.removesuffix('.py')}")
    bad = [
        f"{module.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for module in modules_of(part)
        for line, name in imports(module)
        if name.startswith("mediagen_nb.") and not any(name == a or name.startswith(a + ".") for a in allowed)
    ]
    assert bad == []


# What keeps time, runs threads, loops or processes, or holds sockets, TLS or stored state: run-time
# machinery, which lives in ``runtime/`` (or the side that runs it), never among the spec's rules.
MACHINERY = (
    "asyncio",
    "certifi",
    "concurrent",
    "filelock",
    "multiprocessing",
    "sched",
    "selectors",
    "signal",
    "socket",
    "sqlite3",
    "ssl",
    "subprocess",
    "threading",
    "time",
)


def machinery(module: Path) -> list[str]:
    return [
        f"{module.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for line, name in imports(module)
        if name.split(".")[0] in MACHINERY
    ]


def test_the_protocol_holds_rules_not_run_time_machinery() -> None:
    assert [found for module in modules_of("protocol") for found in machinery(module)] == []
    assert machinery(PACKAGE / "runtime" / "clock.py")  # a clock put back among the rules would fail


# The engines' adapters, the only modules that may import Ray or Daft (the [ray] and [daft] extras).
ENGINE_ADAPTERS = {"ray.py": "ray", "daft.py": "daft"}


def test_only_the_engine_adapters_import_ray_or_daft() -> None:
    bad = []
    for module in sorted(PACKAGE.rglob("*.py")):
        where = module.relative_to(PACKAGE).as_posix()
        for line, name in imports(module):
            engine = name.split(".")[0]
            if engine in ENGINE_ADAPTERS.values() and ENGINE_ADAPTERS.get(where) != engine:
                bad.append(f"{module.relative_to(PACKAGE.parent)}:{line} imports {name}")
    assert bad == []


def test_the_batch_layer_never_looks_ipython_up() -> None:
    """Not by import (above), nor through ``sys.modules`` or ``get_ipython``: the notebook layer hands
    it its display hook (``batch.routing.register``)."""
    found = []
    for module in sorted((PACKAGE / "batch").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(), str(module))):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
            name = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else None
            )
            if (text is not None and text.split(".")[0] == "IPython") or name == "get_ipython":
                found.append(f"{module.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert found == []


CLIENT = PACKAGE / "client"


def client_modules() -> dict[str, Path]:
    """The client's modules by dotted name (a package by its own name)."""
    found = {}
    for module in CLIENT.rglob("*.py"):
        parts = module.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = module
    return found


def run_time_imports(module: Path, name: str, known: set[str]) -> set[str]:
    """The client modules ``module`` imports when it runs: every import, also inside functions, but
    not those under ``if TYPE_CHECKING:``. ``from package import module`` names the module only."""
    package = name if module.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(module.read_text(), str(module)))
    found = set()
    for imported in names:
        while imported and imported not in known:
            imported = imported.rpartition(".")[0]
        if imported and imported != name:
            found.add(imported)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of ``graph`` with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_client_has_no_run_time_import_loop_of_more_than_three_modules() -> None:
    """Computed from the source: the client's modules and their run-time imports (function-local ones
    too). A loop through more than three modules is a knot every change has to untie."""
    modules = client_modules()
    graph = {name: run_time_imports(path, name, set(modules)) for name, path in modules.items()}
    assert [part for part in cycles(graph) if len(part) > 3] == []
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the check works


def test_only_the_assembler_reads_the_process_state() -> None:
    """``PROCESS`` is named in the module that defines it and in the assembler, nowhere else in the
    client: every other part receives what it uses."""
    naming = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in CLIENT.rglob("*.py")
        if any(isinstance(n, ast.Name) and n.id == "PROCESS" for n in ast.walk(ast.parse(path.read_text())))
        or any(
            isinstance(n, ast.ImportFrom) and any(a.name == "PROCESS" for a in n.names)
            for n in ast.walk(ast.parse(path.read_text()))
        )
    )
    assert naming == ["client/assemble.py", "client/context.py"]


def test_the_sandbox_state_file_stores_rows_of_resources_it_does_not_know() -> None:
    """Each part of the sandbox dumps and loads its own resources (``sandbox/saved.py``), as moto's
    backends do: ``state.py`` imports none of their modules, only the rows' contract (and the World's
    type, to annotate), and builds no resource from its saved form."""
    state = PACKAGE / "sandbox" / "state.py"
    allowed = ("mediagen_nb.sandbox.saved", "mediagen_nb.sandbox.world.World")
    named = [name for _, name in imports(state) if name.startswith("mediagen_nb.")]
    assert [
        name for name in named if not name.startswith(allowed) and name != "mediagen_nb.sandbox.world"
    ] == []
    tree = ast.parse(state.read_text())
    assert [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "from_dict"] == []


# Where the client may name a time scale (``time_scale``, ``scale``): the clock that holds it
# (timing.py), the assembler that builds that clock once from the settings, the settings it is built
# from (config.py's Settings, and the kept sandbox's own scale; settings.py reads MEDIAGEN_TIME_SCALE)
# and the clients' constructor, which hands its argument to the assembler. Only the clock, the assembler
# and config.py's Embedded read one off an object.
SCALE_NAMES = ("time_scale", "scale")
NAMING_A_SCALE = {
    "client/assemble.py",
    "client/clients.py",
    "client/config.py",
    "client/settings.py",
    "client/timing.py",
}
READING_A_SCALE = {"client/assemble.py", "client/config.py", "client/timing.py"}


def scale_names(tree: ast.AST) -> tuple[list[int], list[int]]:
    """The lines where ``tree`` names a time scale (any way), and those where it reads one off an object."""
    named, read = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SCALE_NAMES:
            read.append(node.lineno)
        name = (
            node.id
            if isinstance(node, ast.Name)
            else node.arg
            if isinstance(node, (ast.arg, ast.keyword))
            else node.attr
            if isinstance(node, ast.Attribute)
            else None
        )
        if name in SCALE_NAMES:
            named.append(getattr(node, "lineno", 0))
    return named, read


def test_time_runs_in_one_unit_behind_one_clock() -> None:
    """The client's one clock holds the time scale (``ServiceClock``, built by the assembler alone);
    ``Limits`` is in the service's seconds and carries none, and no part of the engine reads a scale
    beside its clock: what needs real seconds asks the clock (``clock.real``)."""
    from dataclasses import fields

    from mediagen_nb.client.pacing import Limits

    assert not [f.name for f in fields(Limits) if "scale" in f.name]
    assert not [name for name in dir(Limits) if "scale" in name or name.startswith("real")]
    naming: set[str] = set()
    reading: set[str] = set()
    building: set[str] = set()
    for path in sorted(CLIENT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = path.relative_to(PACKAGE).as_posix()
        named, read = scale_names(tree)
        naming |= {where} if named else set()
        reading |= {where} if read else set()
        calls = [
            n for n in ast.walk(tree) if isinstance(n, ast.Call) and "ServiceClock" in ast.unparse(n.func)
        ]
        building |= {where} if calls else set()
    assert naming <= NAMING_A_SCALE and reading <= READING_A_SCALE, (naming, reading)
    assert building == {"client/assemble.py"}
    assert scale_names(ast.parse("limits.time_scale; f(scale=2)")) == ([1, 1], [1])  # the check works
