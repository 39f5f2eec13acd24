"""The layers of docs/architecture.md, checked: the folders are the boundaries.

Every top-level folder (or module) of the package has a layer here, and every module inside it
shares that layer. The checks: imports only go down; another folder is reached through its
surface (its ``__init__`` or public modules, never an underscored module or name); no import
circle except among the hub's friends in ``_core/``; the package never imports itself by string
nor treats its own modules as optional; the core needs no third-party package besides trio,
attrs and cattrs; no module outside ``_core/`` reads another module's private state; every
scheduler bridge reports to ``tracker.SchedulerFacts``; the server imports no Redis client but
through its one named door. Imports are read with ``ast``, function bodies and ``TYPE_CHECKING`` blocks
included (a lazy import that hides a cycle is still an edge). A new folder fails until it is
given a layer, which is the point: placing it is a decision.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import workflow_hub

PACKAGE = Path(workflow_hub.__file__).parent

BASE, CONTRACT, CORE, CLIENTS, INTEGRATIONS, HOSTS, APPLICATIONS = range(7)
LAYER_NAMES = (
    "base",
    "contract",
    "core",
    "in-process clients",
    "integrations",
    "hosts and schedulers",
    "applications",
)

# Every top-level module or folder of the package, by layer (docs/architecture.md draws the
# same table). A module's layer is its folder's: the folder is the boundary.
LAYERS: dict[str, int] = {
    "_public": BASE,
    "_defaults": BASE,  # defaults several layers share (the served port)
    "_exceptions": BASE,  # WorkflowHubError, the base every layer's exceptions derive from
    "_failure_log": BASE,  # one traceback per kind of failure, then counts (every consumer)
    "_status_line": BASE,  # the aggregate status rule on plain strings (reporting and `status`)
    "_contract": CONTRACT,
    "contract": CONTRACT,
    "wire": CONTRACT,
    "_core": CORE,
    "_threads": CLIENTS,
    "tracker": CLIENTS,
    "reporting": CLIENTS,
    "": CLIENTS,  # the package root re-exports the contract, the core and the tracker
    "metrics": INTEGRATIONS,
    "remote": INTEGRATIONS,
    "server": INTEGRATIONS,
    "fleet": INTEGRATIONS,  # the fleet-engine interface: server, redis and the commands use it
    "redis": INTEGRATIONS,
    "testing": INTEGRATIONS,
    "alerts": INTEGRATIONS,  # alerts: the folded view's conditions, sent to Alertmanager, webhooks
    "otel": INTEGRATIONS,  # OpenTelemetry traces from the hook events (the otel extra)
    "_hosting": HOSTS,  # what the asyncio and thread hosts share
    "asyncio": HOSTS,
    "sync": HOSTS,
    "langgraph": HOSTS,
    "celery": HOSTS,
    "airflow": HOSTS,
    "_cli": APPLICATIONS,
}

# The one place where modules may use each other's private names and import each other in a
# circle (docs/architecture.md: the hub and its friends).
FRIENDS = "_core"

# Edges the layers allow but a decision forbids (docs/decisions.md says why).
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    (
        "tracker._heartbeat",
        "tracker._tracker",
        "HeartbeatSchedule owns heartbeat state; the tracker owns it",
    ),
    (
        "tracker._heartbeat",
        "tracker._ledger",
        "HeartbeatSchedule owns heartbeat state; the ledger owns the schedule",
    ),
    ("_core._instruments", "metrics", "the core owns the interface; metrics implement it"),
)

# Private methods of the core's classes that a module of another folder may call: each one a
# decision in docs/decisions.md. (calling module, method name).
CORE_PRIVATE_ENTRIES: frozenset[tuple[str, str]] = frozenset(
    {
        # "A private entry for the tracker's lifecycle events" (issue 29, perf4).
        ("tracker._publication", "_publish_checked_lifecycle"),
        # "The hosts' threads" (issue 37): a fact is refused before the tracker folds it; the
        # check lives in Publication.require_started and its written-out copy in the ledger.
        ("tracker._publication", "_require_hub_thread"),
        ("tracker._ledger", "_require_hub_thread"),
    }
)

# What the core (layers up to CLIENTS) may import besides the standard library.
CORE_THIRD_PARTY = {"trio", "attrs", "cattrs"}
# What `import workflow_hub` must not load: the optional extras and prometheus-client.
NOT_ON_IMPORT = (
    "prometheus_client",
    "starlette",
    "hypercorn",
    "httpx",
    "httpx_sse",
    "coredis",
    "hypothesis",
    "rich",
    # The server's streams are written with anyio (Starlette's own), so that they also run on
    # asyncio for a hub hosted by workflow_hub.asyncio; uvicorn is for the hosts' tests only.
    "anyio",
    "uvicorn",
    "langgraph",
    "langchain_core",
    "celery",
    "kombu",
    "opentelemetry",
)


def module_names() -> dict[str, Path]:
    """Every module of the package, by its name relative to the package ("" for the root)."""
    names: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def top(name: str) -> str:
    """The top-level module or folder ``name`` belongs to ("" for the root)."""
    return name.split(".")[0]


def layer_of(name: str) -> int | None:
    return LAYERS.get(top(name))


def import_edges(name: str, path: Path) -> tuple[list[tuple[str, tuple[str, ...]]], set[str]]:
    """What ``name`` imports: ``(module of the package, names taken from it)`` pairs (no names
    for ``import x`` and for a module taken with ``from . import x``), and the top-level
    third-party or stdlib packages."""
    is_package = path.name == "__init__.py"
    here = ["workflow_hub", *name.split(".")] if name else ["workflow_hub"]
    package = here if is_package else here[:-1]
    ours: list[tuple[str, tuple[str, ...]]] = []
    others: set[str] = set()

    def add(dotted: str, names: tuple[str, ...] = ()) -> None:
        if dotted == "workflow_hub" or dotted.startswith("workflow_hub."):
            own = dotted.removeprefix("workflow_hub").removeprefix(".")
            if own != name:
                ours.append((own, names))
        else:
            others.add(dotted.split(".")[0])

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = (
                ["workflow_hub"] if node.level == 0 else package[: len(package) - (node.level - 1)]
            )
            if node.level == 0:
                assert node.module is not None
                base = node.module.split(".")
            elif node.module is not None:
                base = [*base, *node.module.split(".")]
            dotted = ".".join(base)
            for alias in node.names:
                candidate = f"{dotted}.{alias.name}".removeprefix("workflow_hub.")
                if candidate in MODULES:  # from . import module
                    add(f"{dotted}.{alias.name}")
                else:
                    add(dotted, (alias.name,))
    return ours, others


def imports_of(name: str, path: Path) -> tuple[set[str], set[str]]:
    """(modules of the package, top-level third-party or stdlib packages) that ``name`` imports."""
    ours, others = import_edges(name, path)
    return {target for target, _ in ours}, others


def resolve(target: str, modules: dict[str, Path]) -> str:
    """The module an import names (``from .server import x`` may name a package attribute)."""
    while target not in modules and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


MODULES = module_names()


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(name or "workflow_hub" for name in MODULES if layer_of(name) is None)
    assert not unplaced, (
        f"give these folders a layer in tests/package/test_architecture.py: {unplaced}"
    )


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_down(name: str) -> None:
    """A module imports only modules of its own layer or below (docs/architecture.md)."""
    layer = layer_of(name)
    assert layer is not None
    ours, _ = imports_of(name, MODULES[name])
    upward = []
    for target in sorted(ours):
        resolved = resolve(target, MODULES)
        target_layer = layer_of(resolved)
        assert target_layer is not None, f"{name} imports {target}, which has no layer"
        if target_layer > layer:
            upward.append(f"{resolved} ({LAYER_NAMES[target_layer]})")
    assert not upward, f"{name} ({LAYER_NAMES[layer]}) imports upward: {upward}"


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_other_folders_are_reached_through_their_surface(name: str) -> None:
    """Across folders a module imports a folder's ``__init__`` or one of its public modules, and
    no underscored name: a folder exposes what its siblings need, under names that say so.
    Inside a folder anything goes; the root may take anything its subpackages export."""
    ours, _ = import_edges(name, MODULES[name])
    reaching = []
    for target, names in ours:
        module = resolve(target, MODULES)
        if top(module) == top(name) or not module:
            continue
        inner = module.split(".")[1:]
        if any(_is_private(part) for part in inner):
            reaching.append(f"{module} (a private module of {top(module)}/)")
        reaching.extend(f"{module}.{n}" for n in names if _is_private(n) and n != "*")
    assert not reaching, f"{name} reaches into another folder: {reaching}"


def core_private_methods() -> set[str]:
    """The underscored (not dunder) methods defined in the classes of the core's modules."""
    found: set[str] = set()
    for name, path in MODULES.items():
        if top(name) != FRIENDS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.update(
                    member.name
                    for member in node.body
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef)
                    and _is_private(member.name)
                )
    return found


CORE_PRIVATE_METHODS = core_private_methods()


@pytest.mark.parametrize("name", sorted(name for name in MODULES if top(name) != FRIENDS))
def test_the_core_s_private_methods_stay_in_the_core(name: str) -> None:
    """Outside ``_core/`` no module calls a private method of the core's classes on another
    object (a publisher, a hub), except the entries listed in ``CORE_PRIVATE_ENTRIES``: the
    imports above cannot see an attribute, so this reads every ``x._name`` with a core
    method's name."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    reaching = sorted(
        f"{ast.unparse(node.value)}.{node.attr} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in CORE_PRIVATE_METHODS
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        and (name, node.attr) not in CORE_PRIVATE_ENTRIES
    )
    assert not reaching, f"{name} calls private methods of the core: {reaching}"


def test_the_core_s_private_entries_exist_and_are_used() -> None:
    """Every allowed entry is a private method of the core that its module does call (a stale
    entry would allow a call nobody decided on)."""
    for module, method in CORE_PRIVATE_ENTRIES:
        assert method in CORE_PRIVATE_METHODS, method
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        assert any(
            isinstance(node, ast.Attribute) and node.attr == method for node in ast.walk(tree)
        ), (module, method)


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    return {
        name: {resolve(target, MODULES) for target in imports_of(name, path)[0]} - {name}
        for name, path in MODULES.items()
    }


def test_no_import_circle_outside_the_core() -> None:
    """Lazy and ``TYPE_CHECKING`` imports count: a cycle hidden by a lazy import is still one.
    Only the hub and its friends (``_core/``) may form one."""
    circles = [
        sorted(component)
        for component in _strongly_connected(import_graph())
        if len(component) > 1 and {top(member) for member in component} != {FRIENDS}
    ]
    assert not circles, f"import circles: {circles}"


_STRING_IMPORT = re.compile(r"""(import_module|__import__)\(\s*[rbuf]?["'](workflow_hub\b|\.)""")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_package_never_imports_itself_by_string(name: str) -> None:
    """The package's own modules are never optional: no ``importlib.import_module`` of them
    (the layer checks above could not see such an import)."""
    assert not _STRING_IMPORT.search(MODULES[name].read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_third_party_imports_are_optional(name: str) -> None:
    """An import guarded by ``except ImportError`` is for a third-party extra, never for a
    module of this package."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    guarded = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        catches = {ast.unparse(handler.type) for handler in node.handlers if handler.type}
        if not catches & {"ImportError", "ModuleNotFoundError"}:
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and (
                statement.level > 0 or (statement.module or "").startswith("workflow_hub")
            ):
                guarded.append(ast.unparse(statement))
    assert not guarded, f"{name} treats its own package as optional: {guarded}"


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if (layer_of(n) or 0) <= CLIENTS and top(n).startswith("_"))
)
def test_the_core_needs_no_extra(name: str) -> None:
    """The contract, the core and the in-process clients need trio, attrs and cattrs only."""
    _, others = imports_of(name, MODULES[name])
    foreign = sorted(others - set(sys.stdlib_module_names) - CORE_THIRD_PARTY)
    assert not foreign, f"{name} is core and imports {foreign}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if top(n) in {"tracker", "reporting"}))
def test_the_clients_need_no_extra(name: str) -> None:
    _, others = imports_of(name, MODULES[name])
    foreign = sorted(others - set(sys.stdlib_module_names) - CORE_THIRD_PARTY)
    assert not foreign, f"{name} is an in-process client and imports {foreign}"


@pytest.mark.parametrize(("importer", "imported", "why"), FORBIDDEN)
def test_forbidden_edges(importer: str, imported: str, why: str) -> None:
    ours, _ = imports_of(importer, MODULES[importer])
    assert imported not in {resolve(t, MODULES) for t in ours}, why


def test_the_checker_sees_what_it_must(tmp_path: Path) -> None:
    """The parser finds relative, absolute and lazy imports and the names taken, the cycle
    finder finds a cycle, and the string check sees ``import_module`` (else the tests above
    prove nothing)."""
    source = tmp_path / "_probe.py"
    source.write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from ._contract import Frame\n"
        "from .reporting._aggregate import _first\n"
        "import workflow_hub.wire\n"
        "if TYPE_CHECKING:\n"
        "    from .server import serve_hub\n"
        "def f():\n"
        "    from . import metrics\n"
        "    import prometheus_client\n",
        encoding="utf-8",
    )
    ours, others = import_edges("_probe", source)
    assert set(ours) == {
        ("_contract", ("Frame",)),
        ("reporting._aggregate", ("_first",)),
        ("wire", ()),
        ("server", ("serve_hub",)),
        ("metrics", ()),
    }
    assert "prometheus_client" in others
    assert _strongly_connected({"a": {"b"}, "b": {"a"}, "c": set()}) == [{"a", "b"}, {"c"}] or (
        sorted(map(sorted, _strongly_connected({"a": {"b"}, "b": {"a"}, "c": set()})))
        == [["a", "b"], ["c"]]
    )
    assert _STRING_IMPORT.search('importlib.import_module("workflow_hub._cli._watch")')
    assert not _STRING_IMPORT.search('importlib.import_module("coredis")')


def test_importing_the_package_loads_no_transport_nor_prometheus() -> None:
    """`import workflow_hub` and running a hub need none of the extras nor prometheus-client."""
    program = (
        "import sys, trio, workflow_hub\n"
        "async def main():\n"
        "    async with workflow_hub.open_hub() as hub:\n"
        "        hub.register_publisher().publish_snapshot('ready', [])\n"
        "trio.run(main)\n"
        f"loaded = sorted(m for m in {NOT_ON_IMPORT!r} if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


# Underscored attributes of the standard library that are its public API (namedtuple's methods,
# ``sys._getframe``), and the one factory every handle class shares (``NoPublicConstructor``'s
# ``Cls._create``, defined in ``_public``): reading them is no reach into another module.
PUBLIC_UNDERSCORED = frozenset({"_replace", "_asdict", "_fields", "_make", "_getframe", "_create"})


def private_names_defined(tree: ast.AST) -> set[str]:
    """The underscored names a module defines for itself: its functions, classes and methods,
    the attributes it assigns (``x._name = …``), its variables, parameters and ``__slots__``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # "__slots__" entries, attrs' alias= and the like
    return {name for name in names if _is_private(name)}


def foreign_private_reads(name: str, tree: ast.AST) -> list[str]:
    """Every ``x._name`` in ``name`` where ``_name`` is no name of its own module: an attribute
    of an object another module defines, read or written from outside. ``self`` and ``cls``
    may use what their base classes define."""
    own = private_names_defined(tree)
    return sorted(
        f"{ast.unparse(node.value)}.{node.attr} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and _is_private(node.attr)
        and node.attr not in own
        and node.attr not in PUBLIC_UNDERSCORED
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        and (name, node.attr) not in CORE_PRIVATE_ENTRIES
    )


@pytest.mark.parametrize("name", sorted(name for name in MODULES if top(name) != FRIENDS))
def test_no_module_reads_another_module_s_private_state(name: str) -> None:
    """Outside ``_core/`` (the one friendship) no module reads or writes an underscored
    attribute of another module's object; the entries of ``CORE_PRIVATE_ENTRIES`` are the only
    exceptions. Objects that must share state share a small state object with public fields
    (trio's ``MemoryChannelState``), or one exposes a method that says what the other needs."""
    reads = foreign_private_reads(name, ast.parse(MODULES[name].read_text(encoding="utf-8")))
    assert not reads, f"{name} reads another module's private state: {reads}"


def test_the_private_state_check_sees_a_reach() -> None:
    """The check flags a read of another object's underscored attribute and passes one the
    module defines itself (else the test above proves nothing)."""
    tree = ast.parse(
        "class A:\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def f(self, other, state):\n"
        "        return other._mine + state._totals + self._inherited + other._replace()\n"
    )
    assert foreign_private_reads("probe", tree) == ["state._totals (line 5)"]


# The scheduler bridges: folders that turn a scheduler's own events into facts. Each reports to
# the one public protocol (docs/architecture.md, "Where to add a scheduler").
SCHEDULER_BRIDGES = ("airflow", "celery", "langgraph")


@pytest.mark.parametrize("bridge", SCHEDULER_BRIDGES)
def test_every_bridge_reports_to_the_public_fact_protocol(bridge: str) -> None:
    """A bridge's producer of facts takes a ``workflow_hub.tracker.SchedulerFacts`` (not a
    protocol of its own), so every bridge plugs into the same door; only its composition
    function (``celery.serve_celery``) builds a tracker."""
    taken = {
        (resolve(target, MODULES), imported)
        for name, path in MODULES.items()
        if top(name) == bridge
        for target, names in import_edges(name, path)[0]
        for imported in names
    }
    assert ("tracker", "SchedulerFacts") in taken, f"{bridge}/ does not import SchedulerFacts"


# The fleet server reads a fleet through ``workflow_hub.fleet.FleetEngine``; one module of it may
# name an engine: the door that keeps ``serve_fleet(redis, …)`` working by wrapping the client in
# a ``RedisFleet`` (docs/decisions.md, "A fleet engine").
FLEET_SERVER_DOOR = "server._fleet_engine"
REDIS_CLIENTS = {"coredis", "redis"}


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if top(n) == "server" and n != FLEET_SERVER_DOOR)
)
def test_the_server_imports_no_redis_client(name: str) -> None:
    """The server (the fleet server included) imports no Redis client and nothing of
    ``workflow_hub.redis``: a second fleet engine is a new folder, not a change here."""
    ours, others = imports_of(name, MODULES[name])
    engines = sorted(t for t in ours if top(resolve(t, MODULES)) == "redis")
    assert not others & REDIS_CLIENTS, f"{name} imports {sorted(others & REDIS_CLIENTS)}"
    assert not engines, f"{name} imports the Redis engine: {engines}"


def test_the_fleet_server_s_door_exists() -> None:
    """The one allowed module exists and is the one that names Redis (a stale name would allow
    nothing and hide a new door)."""
    ours, _ = imports_of(FLEET_SERVER_DOOR, MODULES[FLEET_SERVER_DOOR])
    assert any(top(resolve(t, MODULES)) == "redis" for t in ours)


# A class that grows past this is several concepts waiting to be rooms of their own (the tracker
# was one of 992 lines before issue 35); ``_core/`` is exempt, as the hub's friends are.
MAX_CLASS_LINES = 500


@pytest.mark.parametrize("name", sorted(name for name in MODULES if top(name) != FRIENDS))
def test_no_class_outside_the_core_is_over_500_lines(name: str) -> None:
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
    ]
    assert not long, f"{name}: split {long} into rooms"
