"""The static pass's parse (auditor/static/parse.py): libcst's tree, without re-validating
what the parser built, and libcst's checks back for trees built by hand afterwards."""

from __future__ import annotations

import libcst as cst
import pytest

from auditor.static.parse import parse_module

SOURCE = "import torch\n\ndef f(x, *, y=1):\n    with torch.no_grad():\n        return [a for a in x if a]\n"


def test_same_tree_as_libcst() -> None:
    tree = parse_module(SOURCE)
    assert tree.code == SOURCE
    assert tree.deep_equals(cst.parse_module(SOURCE))


def test_hand_built_nodes_are_still_checked() -> None:
    parse_module(SOURCE)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_checks_restored_when_the_parse_fails() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")
