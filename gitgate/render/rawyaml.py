"""Render a raw-YAML source: every document of its files, validated, `kind: List` expanded."""

from __future__ import annotations

from gitgate.errors import GitgateError
from gitgate.model import Manifest, Problem, Source
from gitgate.render.post import expand_lists, invalid_reason
from gitgate.source.tree import RepoTree
from gitgate.yamlio import YamlSyntaxError, load_documents


def render_raw(source: Source, tree: RepoTree) -> tuple[list[Manifest], list[Problem]]:
    objects: list[Manifest] = []
    problems: list[Problem] = []
    for file in source.files:
        try:
            text = tree.read(file)
        except GitgateError as exc:
            problems.append(Problem(source.path, exc.message, file, None, exc.reason))
            continue
        if text is None:
            problems.append(Problem(source.path, "cannot read the file", file))
            continue
        try:
            documents = list(load_documents(text))
        except YamlSyntaxError as exc:
            problems.append(Problem(source.path, str(exc), file, exc.line))
            continue
        lines: list[int] | None = None
        for index, document in enumerate(documents):
            for item in expand_lists([document.data]):
                reason = invalid_reason(item)
                if reason:
                    if lines is None:  # only a broken file pays for locating its documents
                        lines = [d.line for d in load_documents(text, located=True)]
                    problems.append(Problem(source.path, reason, file, lines[index]))
                else:
                    objects.append(item)  # type: ignore[arg-type]
    return objects, problems
