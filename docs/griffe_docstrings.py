"""A griffe extension for the API reference: CondVLN's docstrings as mkdocstrings renders them.

The docstrings are written for reading in the source and for doctest: Sphinx roles
(``:class:`~condvln.scene.Scene```) name other objects, and ``>>>`` examples run under pytest's
``--doctest-modules``. Markdown knows neither, so once the package is loaded this extension

* turns every role into a cross-reference (``[`Scene`][condvln.scene.model.Scene]``) when its
  target is an object the reference renders (public, with a docstring), else into plain code;
* fences every run of ``>>>`` lines with its expected output as a ``pycon`` block, so that
  ``[...]`` in an output is not read as a Markdown link and ``>>>`` not as a quote.

Loaded by ``mkdocs.yml`` (``plugins.mkdocstrings.handlers.python.options.extensions``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import griffe

ROLE = re.compile(r":(?:mod|class|func|meth|attr|data|exc|obj):`(~?)([\w.]+)`")
PROMPT = re.compile(r"^(\s*)>>> ")


def _rendered(collection: griffe.ModulesCollection, path: str) -> griffe.Object | None:
    """The object at ``path`` if the reference renders it (public and documented), else None."""
    try:
        found = collection.get_member(path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    if found.is_alias:
        try:
            found = found.final_target
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
    parts = found.path.split(".")
    if len(parts) < 2 or any(p.startswith("_") and not p.startswith("__") for p in parts):
        return None  # the top package has no page of its own; private names are filtered
    return found if found.is_module or found.has_docstring else None


def _target(obj: griffe.Object, name: str) -> str:
    """The dotted path a role's ``name`` means where ``obj`` is documented."""
    if name.startswith("."):
        module = obj.module
        package = module if module.is_package or module.is_init_module else module.parent
        dots = len(name) - len(name.lstrip("."))
        for _ in range(dots - 1):
            package = package.parent
        return f"{package.path}.{name.lstrip('.')}"
    if name.startswith("condvln."):
        return name
    head, dot, rest = name.partition(".")
    try:
        return obj.resolve(head) + dot + rest
    except griffe.NameResolutionError:
        return name


def _roles(obj: griffe.Object, text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        short, name = match.groups()
        shown = name.rsplit(".", 1)[-1] if short else name.lstrip(".")
        found = _rendered(obj.modules_collection, _target(obj, name))
        return f"[`{shown}`][{found.path}]" if found else f"`{shown}`"

    return ROLE.sub(replace, text)


def _doctests(text: str) -> str:
    """Fence each run of ``>>>`` / ``...`` lines and the output up to the next blank line."""
    out: list[str] = []
    indent: str | None = None  # the open block's indentation
    for line in text.splitlines():
        prompt = PROMPT.match(line)
        if prompt and indent is None:
            indent = prompt.group(1)
            out.append(f"{indent}```pycon")
        elif indent is not None and not line.strip():
            out.append(f"{indent}```")
            indent = None
        out.append(line)
    if indent is not None:
        out.append(f"{indent}```")
    return "\n".join(out)


class DocstringsForMarkdown(griffe.Extension):
    """Rewrite every docstring of a loaded package for Markdown (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: object) -> None:
        """Called once the whole package is loaded, so that every role's target can be found."""
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = _doctests(_roles(obj, obj.docstring.value))


def _walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and every object defined in it (not the names it imports)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)
