"""A griffe extension for the API pages of the docs site (``mkdocs.yml`` loads it).

cogworker's docstrings are written to read well in ``help()`` and in the source: reST roles
(:class:`Job`), double backquotes and ``::`` before an indented example. This turns the
roles into code spans and the ``::`` markers into a plain colon, so that Markdown renders
them as the reader expects. Nothing else in a docstring changes.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([^`]+)`")
_LITERAL_MARKER = re.compile(r"(?m)^(\s*)::\s*$|(?<=\S)::\s*$")


def _role(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def _literal(match: re.Match[str]) -> str:
    return "" if match.group(1) is not None else ":"


class RstRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = _ROLE.sub(_role, obj.docstring.value)
            obj.docstring.value = _LITERAL_MARKER.sub(_literal, text)
