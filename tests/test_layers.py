"""The layers of docs/architecture.md hold: every import of every module, lazy ones inside functions too.

The tables below are the document's "What may import what", as data: a module belongs to the layer
of the longest prefix that names it, and may import only the layers its row lists. A rule the code
breaks fails here with the file, the line and both layers; a rule that changes changes in both places.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The packages whose modules are checked (tests and bench stand above everything and are not).
PACKAGES = ("protocols", "gateway", "devices", "hwgateway")

#: Module prefix -> layer (docs/architecture.md, "The layers"); the longest prefix decides.
LAYER_OF_PREFIX: dict[str, str] = {
    "protocols": "protocols",
    "gateway": "core",
    "gateway.servers": "servers",
    "gateway.faces": "faces",
    "devices": "devices",
    "hwgateway": "clients",
    "gateway.__main__": "root",
    "gateway.cli": "root",
    "gateway.app": "root",
    "gateway.config": "root",
    "gateway.record_cli": "root",
    "gateway.reload": "root",
    "gateway.device_options": "root",
    "gateway.scan": "root",
    "gateway.pair": "root",
}

#: Layer -> the layers its modules may import (docs/architecture.md, "What may import what").
MAY_IMPORT: dict[str, frozenset[str]] = {
    "protocols": frozenset({"protocols"}),
    "core": frozenset({"core", "protocols"}),
    "clients": frozenset({"clients", "core", "protocols"}),
    "servers": frozenset({"servers", "core", "protocols"}),
    "faces": frozenset({"faces", "servers", "core", "protocols"}),
    "devices": frozenset({"devices", "core", "protocols"}),
    "root": frozenset({"root", "faces", "servers", "devices", "clients", "core", "protocols"}),
}

#: Face modules every face may import; otherwise a face imports no other face.
SHARED_FACE_MODULES = frozenset({"gateway.faces.outbox", "gateway.faces.contract", "gateway.faces.native.messages"})
#: Core modules that faces and the servers reach only through the client core (`gateway.core.client`).
BEHIND_THE_CLIENT_CORE = frozenset({"gateway.supervisor", "gateway.commands"})


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's target, as a module of this repository."""

    module: str  # the importing module
    path: Path
    line: int
    target: str  # the imported module (a name imported from a package is resolved to its submodule)
    names: tuple[str, ...]  # the names taken with `from target import ...` (empty for `import target`)
    top_level: bool  # at module level, outside `if TYPE_CHECKING:` (runs when the module is imported)


def module_name(path: Path) -> str:
    """`gateway/faces/native/session.py` -> `gateway.faces.native.session` (a package's `__init__` is the package)."""
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[Path]:
    """Every Python module of the checked packages (generated protobuf code excepted)."""
    return sorted(
        path for package in PACKAGES for path in (REPO_ROOT / package).rglob("*.py") if "generated" not in path.parts
    )


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, known: frozenset[str]) -> Iterator[Import]:
    """Every import of our packages in `path`, at any depth (inside functions, classes and `if`s too)."""
    module = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    top_level_nodes = {id(node) for node in tree.body}

    def visit(node: ast.AST, guarded: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                yield from visit(child, True)
                continue
            top = id(child) in top_level_nodes and not guarded
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if _ours(alias.name):
                        yield Import(module, path, child.lineno, alias.name, (), top)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: resolved against this module's package
                    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                    base = ".".join(package[: len(package) - child.level + 1] + ([base] if base else []))
                if not _ours(base):
                    continue
                plain = tuple(alias.name for alias in child.names if f"{base}.{alias.name}" not in known)
                if plain or not child.names:
                    yield Import(module, path, child.lineno, base, plain, top)
                for alias in child.names:  # `from package import submodule`
                    if f"{base}.{alias.name}" in known:
                        yield Import(module, path, child.lineno, f"{base}.{alias.name}", (), top)
            yield from visit(child, guarded)

    yield from visit(tree, False)


def layer_of(module: str) -> str:
    """The layer of `module`: that of the longest prefix of `LAYER_OF_PREFIX` naming it."""
    best = ""
    for prefix in LAYER_OF_PREFIX:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    if not best:
        raise KeyError(f"{module} is in no layer of docs/architecture.md")
    return LAYER_OF_PREFIX[best]


def face_of(module: str) -> str | None:
    """`gateway.faces.mqtt.bridge` -> `mqtt`; None outside a face's own package."""
    parts = module.split(".")
    if parts[:2] != ["gateway", "faces"] or len(parts) < 3 or module in SHARED_FACE_MODULES:
        return None
    return parts[2] if (REPO_ROOT / "gateway" / "faces" / parts[2]).is_dir() else None


@pytest.fixture(scope="module")
def every_import() -> list[Import]:
    files = source_files()
    known = frozenset(module_name(path) for path in files)
    return [found for path in files for found in imports_of(path, known)]


def _where(found: Import) -> str:
    return f"{found.path.relative_to(REPO_ROOT)}:{found.line}: {found.module} imports {found.target}"


def test_every_module_is_in_a_layer() -> None:
    for path in source_files():
        layer_of(module_name(path))


def test_no_import_crosses_a_layer_the_document_forbids(every_import: list[Import]) -> None:
    crossing = [
        f"{_where(found)} ({layer_of(found.module)} -> {layer_of(found.target)})"
        for found in every_import
        if layer_of(found.target) not in MAY_IMPORT[layer_of(found.module)]
    ]
    assert crossing == [], "\n".join(crossing)


def test_only_the_composition_root_imports_devices(every_import: list[Import]) -> None:
    importers = {found.module for found in every_import if found.target.split(".")[0] == "devices"}
    outside = sorted(module for module in importers if layer_of(module) not in ("root", "devices"))
    assert outside == []


def test_a_face_imports_no_other_face_but_the_shared_modules(every_import: list[Import]) -> None:
    crossing = [
        _where(found)
        for found in every_import
        if (face := face_of(found.module)) is not None
        and (other := face_of(found.target)) is not None
        and other != face
    ]
    assert crossing == [], "\n".join(crossing)


def test_faces_and_servers_reach_devices_only_through_the_client_core(every_import: list[Import]) -> None:
    crossing = [
        _where(found)
        for found in every_import
        if layer_of(found.module) in ("faces", "servers") and found.target in BEHIND_THE_CLIENT_CORE
    ]
    assert crossing == [], "\n".join(crossing)


def test_no_private_name_is_imported_from_another_module(every_import: list[Import]) -> None:
    private = [
        f"{_where(found)}: {name}"
        for found in every_import
        for name in found.names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert private == [], "\n".join(private)


def test_an_adapter_imports_its_simulator_only_when_it_starts_one(every_import: list[Import]) -> None:
    eager = [
        _where(found)
        for found in every_import
        if found.top_level
        and found.target.startswith("devices.sim.")
        and found.module.startswith("devices.")
        and not found.module.startswith("devices.sim.")
    ]
    assert eager == [], "\n".join(eager)


def test_loading_every_adapter_loads_no_simulator() -> None:
    # What the rule above is for, seen from a fresh interpreter: the registry's classes load no simulator.
    code = (
        "import json, sys\n"
        "from devices.registry import KINDS\n"
        "for kind in KINDS.kinds():\n"
        "    if kind != 'sim':\n"  # the `sim` kind is itself a simulator
        "        KINDS.adapter_class(kind)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('devices.sim'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
