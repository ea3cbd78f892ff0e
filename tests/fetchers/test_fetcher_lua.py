"""The Lua files of cogworker.fetchers carry complete headers."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from cogworker.redis.scripts import declared_key_count, script_source

PACKAGE = "cogworker.fetchers"
LUA_NAMES = sorted(
    entry.name.removesuffix(".lua")
    for entry in (resources.files(PACKAGE) / "lua").iterdir()
    if entry.name.endswith(".lua")
)


def split_header(source: str) -> tuple[str, str]:
    lines = source.splitlines()
    end = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("--"))
    return "\n".join(lines[:end]), "\n".join(lines[end:])


@pytest.mark.parametrize("name", LUA_NAMES)
def test_every_key_and_argument_used_is_declared(name: str) -> None:
    source = script_source(PACKAGE, name)
    header, body = split_header(source)

    assert "-- luacheck: globals KEYS ARGV redis" in header
    assert re.search(r"^-- Returns\b", header, re.MULTILINE)
    used_keys = {int(n) for n in re.findall(r"KEYS\[(\d+)\]", body)}
    used_args = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", body)}
    declared_args = {int(n) for n in re.findall(r"^--\s*ARGV\[(\d+)\]", header, re.MULTILINE)}
    assert used_keys <= set(range(1, declared_key_count(source) + 1))
    assert used_args <= declared_args
