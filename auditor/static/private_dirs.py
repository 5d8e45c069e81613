"""Private temporary directories: the names a function binds to a folder only its own user can
write, and the paths built inside one.

``tempfile.TemporaryDirectory()`` and ``tempfile.mkdtemp()`` create the folder with mode 0700,
and pytest's ``tmp_path`` / ``tmpdir`` fixtures are made the same way: a file the function writes
there cannot be replaced by anyone else before the function reads it back. A per-file visitor
feeds :class:`PrivateDirs` as it walks (functions, ``with`` items, assignments) and asks
:meth:`PrivateDirs.holds_path_in` of an expression at the point it is read.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

MAKERS = {"tempfile.TemporaryDirectory", "tempfile.mkdtemp"}
PYTEST_FIXTURES = {"tmp_path", "tmpdir"}
# calls that keep their first argument's folder: ``os.path.join(d, "x")``, ``Path(d)``,
# ``str(d / "x")``
KEEP_FOLDER = {"os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath", "str",
               "os.fspath", "os.path.abspath", "os.path.realpath"}
# methods of a path that stay inside it: ``tmp_path.joinpath("x")``, ``tmpdir.join("x")``
KEEP_FOLDER_METHODS = {"joinpath", "join", "with_suffix", "with_name", "resolve", "absolute"}


class PrivateDirs:
    def __init__(self, qualify: Callable[[cst.CSTNode], str]) -> None:
        self.qualify = qualify
        self.scopes: list[set[str]] = [set()]  # names holding a private folder or a path in one

    def enter_function(self, node: cst.FunctionDef) -> None:
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        self.scopes.append({p.name.value for p in params if p.name.value in PYTEST_FIXTURES})

    def leave_function(self) -> None:
        if len(self.scopes) > 1:
            self.scopes.pop()

    def bind_with(self, node: cst.With) -> None:
        for item in node.items:
            if item.asname is not None and isinstance(item.asname.name, cst.Name):
                self._bind(item.asname.name.value, self._made_here(item.item))

    def bind_assign(self, node: cst.Assign) -> None:
        private = self.holds_path_in(node.value)  # a maker's call is its own folder
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._bind(target.target.value, private)

    def holds_path_in(self, expr: cst.BaseExpression) -> bool:
        """``expr`` is a private folder of this function, or a path built inside one."""
        root = self._folder_of(expr)
        return isinstance(root, cst.Name) and root.value in self.scopes[-1] or (
            root is not None and self._made_here(root))

    # -- helpers ------------------------------------------------------------------------------------
    def _bind(self, name: str, private: bool) -> None:
        if private:
            self.scopes[-1].add(name)
        else:
            self.scopes[-1].discard(name)  # rebound to something else

    def _made_here(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.qualify(expr.func) in MAKERS

    def _folder_of(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[cst.BaseExpression]:
        """The expression whose folder ``expr`` lies in (``d`` for ``os.path.join(d, "x")``,
        ``d / "x"``, ``f"{d}/x"``)."""
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            return expr
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
            return self._folder_of(expr.left, depth + 1)
        if isinstance(expr, cst.FormattedString):
            first = expr.parts[0] if expr.parts else None
            if isinstance(first, cst.FormattedStringExpression):
                return self._folder_of(first.expression, depth + 1)
            return None
        if isinstance(expr, cst.Call):
            func = expr.func
            if self._made_here(expr):
                return expr
            if self.qualify(func) in KEEP_FOLDER:
                first = expr.args[0] if expr.args else None
                return self._folder_of(first.value, depth + 1) \
                    if first is not None and first.keyword is None and not first.star else None
            if isinstance(func, cst.Attribute) and func.attr.value in KEEP_FOLDER_METHODS:
                return self._folder_of(func.value, depth + 1)
        return None
