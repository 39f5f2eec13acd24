"""The layers of docs/architecture.md, checked: imports only go down.

Every module of the package is given a layer here; a module that imports one of a higher layer,
an internal that reaches for a public module, or a core module that needs a third-party package
other than trio, attrs and cattrs fails. Imports are read with ``ast`` from the source, function
bodies and ``TYPE_CHECKING`` blocks included (a lazy import that hides a cycle is still an edge).
A new module fails too until it is given a layer, which is the point: placing it is a decision.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import workflow_hub

PACKAGE = Path(workflow_hub.__file__).parent

BASE, CONTRACT, HUB, CLIENTS, INTEGRATIONS, APPLICATIONS = range(6)
LAYER_NAMES = ("base", "contract", "hub", "in-process clients", "integrations", "applications")

# Private modules, by layer (docs/architecture.md has the same table in prose).
LAYERS: dict[str, int] = {
    "_errors": BASE,
    "_enums": BASE,
    "_validate": BASE,
    "_public": BASE,
    "_contract": CONTRACT,
    "_rules": CONTRACT,
    "_cursor_text": CONTRACT,
    "_wire": CONTRACT,
    "_history": HUB,
    "_instruments": HUB,
    "_hub": HUB,
    "_observers": HUB,
    "_publisher": HUB,
    "_hooks": HUB,
    "_threads": HUB,
    "_derive": CLIENTS,
    "_rootstate": CLIENTS,
    "_heartbeat": CLIENTS,
    "_tracker": CLIENTS,
    "_view": CLIENTS,
    "_aggregate": CLIENTS,
    "_reporter": CLIENTS,
    "_metrics": INTEGRATIONS,
    "_remote": INTEGRATIONS,
    "_hosting": INTEGRATIONS,
    "_demo": APPLICATIONS,
    "_demo_rich": APPLICATIONS,
    "_demo_scenario": APPLICATIONS,
    "_cli": APPLICATIONS,
    # Public modules sit with what they re-export, so that a lower layer cannot import them.
    "": CLIENTS,  # the package root
    "contract": CLIENTS,
    "wire": CLIENTS,
    "tracker": CLIENTS,
    "reporting": CLIENTS,
    "metrics": INTEGRATIONS,
    "remote": INTEGRATIONS,
    "redis": INTEGRATIONS,
}
# Families of modules placed by their name.
PREFIXES: tuple[tuple[str, int], ...] = (
    ("server", INTEGRATIONS),
    ("celery._command", APPLICATIONS),
    ("celery", INTEGRATIONS),
    # The hosts (workflow_hub.asyncio, workflow_hub.sync) and what they share (_hosting).
    ("asyncio", INTEGRATIONS),
    ("sync", INTEGRATIONS),
    ("_redis_cli", APPLICATIONS),
    ("_redis_", INTEGRATIONS),
    ("testing._conformance_cli", APPLICATIONS),
    ("testing", INTEGRATIONS),
)
SUFFIXES: tuple[tuple[str, int], ...] = (("_cli", APPLICATIONS),)

# Edges the layers allow but a decision forbids (docs/decisions.md says why).
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("_heartbeat", "_tracker", "HeartbeatSchedule owns heartbeat state; the tracker owns it"),
    ("_instruments", "_metrics", "the core owns the interface; metrics implement it"),
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
    "celery",
    "kombu",
    # The server's streams are written with anyio (Starlette's own), so that they also run on
    # asyncio for a hub hosted by workflow_hub.asyncio; uvicorn is for the hosts' tests only.
    "anyio",
    "uvicorn",
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


def layer_of(name: str) -> int | None:
    if name in LAYERS:
        return LAYERS[name]
    for prefix, layer in PREFIXES:
        if name == prefix or name.startswith(prefix):
            return layer
    for suffix, layer in SUFFIXES:
        if name.endswith(suffix):
            return layer
    return None


def imports_of(name: str, path: Path) -> tuple[set[str], set[str]]:
    """(modules of the package, top-level third-party or stdlib packages) that ``name`` imports."""
    is_package = path.name == "__init__.py"
    here = ["workflow_hub", *name.split(".")] if name else ["workflow_hub"]
    package = here if is_package else here[:-1]
    ours: set[str] = set()
    others: set[str] = set()

    def add(dotted: str) -> None:
        if dotted == "workflow_hub" or dotted.startswith("workflow_hub."):
            ours.add(dotted.removeprefix("workflow_hub").removeprefix("."))
        else:
            others.add(dotted.split(".")[0])

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                assert node.module is not None
                add(node.module)
                continue
            base = package[: len(package) - (node.level - 1)]
            if node.module is not None:
                add(".".join([*base, node.module]))
            else:  # from . import x: x may be a module or a name of the package
                for alias in node.names:
                    add(".".join([*base, alias.name]))
    return {own for own in ours if own != name}, others


def resolve(target: str, modules: dict[str, Path]) -> str:
    """The module an import names (``from .server import x`` may name a package attribute)."""
    while target not in modules and "." in target:
        target = target.rsplit(".", 1)[0]
    # `from .. import WorkflowActivityHub` (a name of the package root, not a module).
    return target if target in modules else ""


MODULES = module_names()


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(name or "workflow_hub" for name in MODULES if layer_of(name) is None)
    assert not unplaced, f"give these modules a layer in tests/test_architecture.py: {unplaced}"


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


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if n.startswith("_") and (layer_of(n) or 0) <= CLIENTS)
)
def test_the_core_imports_internals_and_no_extra(name: str) -> None:
    """Core internals import internals (public modules are for users) and no optional package."""
    ours, others = imports_of(name, MODULES[name])
    public = sorted(t for t in ours if not resolve(t, MODULES).split(".")[-1].startswith("_"))
    assert not public, f"{name} imports public modules {public}; import the internal instead"
    foreign = sorted(others - set(sys.stdlib_module_names) - CORE_THIRD_PARTY)
    assert not foreign, f"{name} is core and imports {foreign}"


@pytest.mark.parametrize(("importer", "imported", "why"), FORBIDDEN)
def test_forbidden_edges(importer: str, imported: str, why: str) -> None:
    ours, _ = imports_of(importer, MODULES[importer])
    assert imported not in {resolve(t, MODULES) for t in ours}, why


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The parser above finds relative, absolute and lazy imports (else the tests prove nothing)."""
    source = tmp_path / "_probe.py"
    source.write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from ._contract import Frame\n"
        "import workflow_hub.wire\n"
        "if TYPE_CHECKING:\n"
        "    from .server import serve_hub\n"
        "def f():\n"
        "    from . import _metrics\n"
        "    import prometheus_client\n",
        encoding="utf-8",
    )
    ours, others = imports_of("_probe", source)
    assert ours == {"_contract", "wire", "server", "_metrics"}
    assert "prometheus_client" in others


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
