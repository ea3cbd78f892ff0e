"""Fake installed distributions for plugin tests.

A :class:`FakeSite` writes ``NAME-VERSION.dist-info`` folders (``METADATA`` and
``entry_points.txt``) and plugin modules into one directory on ``sys.path``, which is what
an installer leaves behind, so ``importlib.metadata`` finds them exactly as it finds real
packages. The real cogworker distribution stays visible, so its builtins are cataloged too;
tests never activate them (their modules are not required here).
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path


class FakeSite:
    """A directory on ``sys.path`` holding fake distributions and their modules."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._top_level: set[str] = set()

    def add_distribution(
        self,
        name: str,
        entry_points: Mapping[str, str],
        modules: Mapping[str, str] | None = None,
        version: str = "1.0",
    ) -> None:
        """Install ``name`` with ``[cogworker]`` entry points and module sources."""
        dist_info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir(parents=True)
        (dist_info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
        )
        lines = "".join(f"{ep_name} = {target}\n" for ep_name, target in entry_points.items())
        (dist_info / "entry_points.txt").write_text(f"[cogworker]\n{lines}", encoding="utf-8")
        for module, source in (modules or {}).items():
            self.add_module(module, source)
        importlib.invalidate_caches()

    def add_module(self, dotted: str, source: str) -> None:
        """Write ``dotted`` (packages get an ``__init__.py``) with ``source``."""
        parts = dotted.split(".")
        folder = self.root
        for package in parts[:-1]:
            folder = folder / package
            folder.mkdir(exist_ok=True)
            (folder / "__init__.py").touch()
        (folder / f"{parts[-1]}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        self.forget(parts[0])
        importlib.invalidate_caches()

    def forget(self, top_level: str) -> None:
        """Have the fixture unload ``top_level`` and its submodules at teardown."""
        self._top_level.add(top_level)

    def unload(self) -> None:
        for name in list(sys.modules):
            if name.split(".")[0] in self._top_level:
                del sys.modules[name]

    def is_imported(self, module: str) -> bool:
        return module in sys.modules


def fetcher_module(label: str, *, trylast: bool = False) -> str:
    """Source of a plugin whose ``cogworker_make_fetcher`` returns a fetcher named ``label``."""
    marker = "@hookimpl(trylast=True)" if trylast else "@hookimpl"
    return f"""
        from cogworker.core.markers import hookimpl


        class DummyFetcher:
            name = {label!r}
            reliable = False


        {marker}
        def cogworker_make_fetcher(app, broker):
            return DummyFetcher()
        """


def heartbeat_module(label: str) -> str:
    """Source of a plugin that records heartbeats in its module-level ``calls`` list."""
    return f"""
        from cogworker.core.markers import hookimpl

        calls = []


        @hookimpl
        def cogworker_heartbeat(worker):
            calls.append(({label!r}, worker))
        """
