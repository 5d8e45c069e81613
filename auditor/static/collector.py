"""The engine's own visitor: fills :class:`FileFacts` (imports, functions, events) in the same
single traversal that runs the rules."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Optional, Sequence, Union

import libcst as cst
from auditor.static.visitor import Visitor

from auditor.static.context import MODULE_SCOPE, FileContext, dotted
from auditor.static.facts import ClassInfo, Event, FunctionInfo
from auditor.static.reading import without_comment
from auditor.static.walk import is_node

AssignLike = Union[cst.Assign, cst.AnnAssign, cst.AugAssign]


_SKIP_FIELDS = frozenset({"lpar", "rpar", "comma", "equal", "colon", "dot", "operator",
                          "semicolon", "leading_lines", "lines_after_decorators", "header",
                          "footer", "star", "keyword", "asynchronous", "whitespace"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _star_name(param: object) -> str:
    """The name of a ``*args`` / ``**kwargs`` parameter; "" for none (or a bare ``*``)."""
    return param.name.value if isinstance(param, cst.Param) else ""


def _child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Expression children without libcst's ``children`` property (which walks every
    whitespace and punctuation node and dominated the collector's time)."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(node)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[type(node)] = names
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if is_node(value):
            out.append(value)
        elif isinstance(value, (tuple, list)):
            out.extend(v for v in value if is_node(v))
    return out


def names_in(node: cst.CSTNode) -> list[str]:
    """Names and dotted attribute chains read by an expression (``self.encoder``, ``x``)."""
    found: list[str] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        kind = type(cur)  # libcst's concrete node classes have no subclasses
        if kind is cst.Name or kind is cst.Attribute:
            text = dotted(cur)
            if text is not None:
                found.append(text)
                if kind is cst.Attribute:
                    # `a.b.c` also reads `a` (and `a.b`): keep the chain's root
                    found.append(text.split(".")[0])
                continue
        if kind is cst.Lambda:
            continue
        if kind is cst.Attribute:  # `f(x).detach`: read f(x), not a name `detach`
            stack.append(cur.value)
        elif kind is cst.Arg:  # `reduction="sum"`: the keyword is not a name read
            stack.append(cur.value)
        else:
            stack.extend(_child_nodes(cur))
    return list(dict.fromkeys(found))


def value_names(node: cst.BaseExpression) -> list[str]:
    """The names an assigned value is: ``b`` -> [b], ``x.module if c else x`` -> [x.module, x]
    (either branch may run); [] when the value is not a name or such a choice."""
    if isinstance(node, cst.IfExp):
        body, orelse = value_names(node.body), value_names(node.orelse)
        return [*body, *orelse] if body and orelse else []
    text = dotted(node)
    return [text] if text is not None else []


def paired_names(targets: Sequence[cst.AssignTarget], value: cst.BaseExpression) -> dict[str, str]:
    """``a, b = x, y``: each target name to the name its element of the value is (elements
    that are not names are left out); empty for any other assignment."""
    if len(targets) != 1 or not isinstance(targets[0].target, (cst.Tuple, cst.List)) \
            or not isinstance(value, (cst.Tuple, cst.List)):
        return {}
    left, right = targets[0].target.elements, value.elements
    if len(left) != len(right) or any(isinstance(e, cst.StarredElement) for e in [*left, *right]):
        return {}
    out: dict[str, str] = {}
    for t, v in zip(left, right):
        target, name = dotted(t.value), dotted(v.value)
        if target is not None and name is not None:
            out[target] = name
    return out


def target_names(node: cst.CSTNode) -> list[str]:
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for el in node.elements for n in target_names(el.value)]
    if isinstance(node, cst.StarredElement):
        return target_names(node.value)
    text = dotted(node)
    if text is not None:
        return [text]
    if isinstance(node, cst.Subscript):
        return target_names(node.value)
    return []


def expr_text(node: cst.CSTNode, ctx: FileContext, limit: int = 80) -> str:
    """Short text of an argument or receiver without regenerating code for the common shapes
    (codegen per call costs more than the whole traversal)."""
    text = dotted(node)
    if text is not None:
        return text
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float)):
        return node.value
    if isinstance(node, cst.Call):
        inner = dotted(node.func)
        if inner is not None:
            return f"{inner}(...)" if node.args else f"{inner}()"
    return ctx.code(node, limit)


def condition_text(line: str) -> Optional[str]:
    """``if cfg.distributed:  # note`` -> ``cfg.distributed`` (from the line, not by regenerating
    code); None when the test goes on past the line."""
    for prefix in ("if ", "elif "):
        if line.startswith(prefix):
            line = line[len(prefix):]
            break
    line = without_comment(line).rstrip()
    return line[:-1].rstrip() if line.endswith(":") else None


def is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return False
    sides = [test.left, target.comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    texts = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return bool(names and texts)


def literal_names(node: cst.Assign) -> Optional[list[str]]:
    """The names of ``__all__ = ["a", "b"]`` (a list or tuple of string literals), else None."""
    if len(node.targets) != 1 or dotted(node.targets[0].target) != "__all__":
        return None
    if not isinstance(node.value, (cst.List, cst.Tuple)):
        return None
    names = [el.value.evaluated_value for el in node.value.elements
             if isinstance(el.value, cst.SimpleString)]
    return [n for n in names if isinstance(n, str)]



EXIT_STACKS = {"contextlib.ExitStack()", "contextlib.AsyncExitStack()"}

class FactCollector(Visitor):
    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.facts = ctx.facts
        top = FunctionInfo(
            qualname=f"{ctx.module_name}.{MODULE_SCOPE}",
            module=ctx.module_name,
            path=ctx.path,
            name=MODULE_SCOPE,
        )
        self.facts.functions[top.qualname] = top
        self.functions: list[FunctionInfo] = [top]
        self.classes: list[str] = []
        self.class_depths: list[int] = []  # how many functions were open at each class's start
        self.withs: list[list[str]] = []
        # per `with`: its items, the names it binds to ExitStacks, the tests and loops around it
        self.exit_stacks: list[tuple[list[str], list[str], int, int]] = []
        self.loops: list[int] = []
        self.loop_ids = itertools.count(1)  # unique per file, so cached facts are stable
        self.conditions: list[str] = []  # enclosing `if` tests, negated in their `else`
        self.ifs: list[cst.If] = []
        self.condition_base: list[int] = [0]  # where the current function's own tests start
        self.handlers: list[bool] = []  # enclosing `except` clauses: does each catch ImportError?
        self.statement: Optional[tuple[list[str], str]] = None  # (targets, text)

    # -- position numbering (see positions.py) ------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if not self.ctx.in_import:  # ast has no Attribute nodes for `import a.b` names
            self.ctx.number(node, "attr")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.ctx.number(node, "subscript")

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None or node.star == "**":
            self.ctx.number(node, "keyword")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self.ctx.number(node, "binop")  # rules report weighted terms (`w * loss`) at theirs

    # -- imports -------------------------------------------------------------------------------
    def leave_Import(self, original_node: cst.Import) -> None:
        self.ctx.in_import -= 1

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self.ctx.in_import -= 1

    def visit_Import(self, node: cst.Import) -> None:
        self.ctx.in_import += 1
        for alias in node.names:
            full = dotted(alias.name) or ""
            if alias.asname is not None:
                self._bind(dotted(alias.asname.name) or full, full)
            else:
                root = full.split(".")[0]
                self._bind(root, root)
                if full != root:
                    self.facts.submodules.append(full)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.ctx.in_import += 1
        mod = dotted(node.module) if node.module is not None else None
        level = len(node.relative)
        base = self.ctx.resolve_relative(level, mod) if level else (mod or "")
        if isinstance(node.names, cst.ImportStar):
            if base:
                self.facts.star_imports.append(base)
                if level:
                    self.facts.local_imports.append(base)
            return
        for alias in node.names:
            name = dotted(alias.name) or ""
            local = dotted(alias.asname.name) if alias.asname is not None else name
            qualified = f"{base}.{name}" if base else name
            self._bind(local or name, qualified)
            if level:
                self.facts.local_imports.append(qualified)

    def _bind(self, alias: str, qualified: str) -> None:
        """An import binds ``alias``; inside ``except ImportError:`` it is the fallback of the
        ``try`` body's import of the same name (which of the two runs is decided per program)."""
        if self.import_fallback and alias in self.facts.imports:
            self.facts.import_fallbacks.setdefault(alias, qualified)
        else:
            self.ctx.add_import(alias, qualified)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        caught = dotted(node.type) if node.type is not None else None
        fallback = caught in (None, "ImportError", "ModuleNotFoundError", "Exception")
        if not fallback and isinstance(node.type, cst.Tuple):
            fallback = any(dotted(el.value) in ("ImportError", "ModuleNotFoundError")
                           for el in node.type.elements)
        self.handlers.append(fallback)

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        self.handlers.pop()

    @property
    def import_fallback(self) -> bool:
        return bool(self.handlers) and self.handlers[-1]

    # -- scopes ----------------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.ctx.number(node, "class")
        qual = ".".join([self.ctx.module_name, *self.classes, node.name.value])
        bases = [self.ctx.qualify(arg.value) for arg in node.bases]
        fields = [s.target.value for line in getattr(node.body, "body", ())
                  if isinstance(line, cst.SimpleStatementLine) for s in line.body
                  if isinstance(s, cst.AnnAssign) and isinstance(s.target, cst.Name)]
        self.facts.classes[qual] = ClassInfo(qual, bases, [], self.ctx.span(node),
                                             [self.ctx.qualify(d.decorator) for d in node.decorators],
                                             fields)
        self.classes.append(node.name.value)
        self.class_depths.append(len(self.functions))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()
        self.class_depths.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.ctx.number(node, "def")
        outer = self.functions[-1]
        # a method, or a function of a module; a closure (one in a method too, whose `self` is
        # the method's) is named inside the function that defines it
        method = bool(self.classes) and len(self.functions) == self.class_depths[-1]
        prefix = (
            [self.ctx.module_name, *self.classes]
            if outer.name == MODULE_SCOPE or method
            else [outer.qualname]
        )
        qual = ".".join([*prefix, node.name.value])
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        params += [p.name.value for p in node.params.kwonly_params]
        info = FunctionInfo(
            qualname=qual,
            module=self.ctx.module_name,
            path=self.ctx.path,
            name=node.name.value,
            class_name=".".join([self.ctx.module_name, *self.classes]) if self.classes else "",
            params=params,
            decorators=[self.ctx.qualify(d.decorator) for d in node.decorators],
            decorator_keys=[self.ctx.code(d.decorator.args[0].value)
                            if isinstance(d.decorator, cst.Call) and d.decorator.args
                            and d.decorator.args[0].keyword is None and not d.decorator.args[0].star
                            else "" for d in node.decorators],
            span=self.ctx.span(node),
            varargs=_star_name(node.params.star_arg),
            varkw=_star_name(node.params.star_kwarg),
            kwonly=len(node.params.kwonly_params),
            defaults={p.name.value: self.ctx.code(p.default)
                      for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
                      if p.default is not None},
        )
        if method:
            cls = self.facts.classes.get(info.class_name)
            if cls is not None:
                cls.methods.append(qual)
        self.facts.functions[qual] = info
        self.functions.append(info)
        # a nested def starts a fresh context: its body does not run inside the outer `with`
        # (nor under the outer `if`)
        self.withs.append(["<def>"])
        self.condition_base.append(len(self.conditions))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()
        self.withs.pop()
        self.condition_base.pop()

    # -- control flow ----------------------------------------------------------------------------
    def visit_With(self, node: cst.With) -> None:
        self.ctx.number(node, "with")
        items = [self.ctx.qualify(item.item) for item in node.items]
        self.withs.append(items)
        # `with ExitStack() as stack:`: what `stack.enter_context(cm)` enters holds the rest of
        # the body, as if it were one of the `with`'s items
        stacks = [item.asname.name.value for item, q in zip(node.items, items)
                  if q in EXIT_STACKS and item.asname is not None and isinstance(item.asname.name, cst.Name)]
        self.exit_stacks.append((items, stacks, len(self.conditions), len(self.loops)))
        self._event("with", node, func=",".join(items), args=items)

    def leave_With(self, original_node: cst.With) -> None:
        self.withs.pop()
        self.exit_stacks.pop()

    def _entered(self, receiver: str, node: cst.Call) -> None:
        """``stack.enter_context(cm)`` run on every pass through its ``with`` body (under no test
        or loop of its own): ``cm`` holds the statements after it."""
        for items, stacks, conditions, loops in reversed(self.exit_stacks):
            if receiver in stacks:
                if (conditions, loops) == (len(self.conditions), len(self.loops)) and node.args:
                    items.append(self.ctx.qualify(node.args[0].value))
                return

    def _enter_loop(self) -> None:
        self.loops.append(next(self.loop_ids))

    def _leave_loop(self) -> None:
        self.loops.pop()

    def visit_For(self, node: cst.For) -> None:
        self.ctx.number(node, "for")
        # `for g, feat in loader:` assigns g and feat from the loader, outside the loop body;
        # its text starts with the header, without the header's comment
        head, newline, body = self.ctx.code(node).partition("\n")
        self._event("assign", node, targets=target_names(node.target), uses=names_in(node.iter),
                    text=without_comment(head).rstrip() + newline + body)
        self._enter_loop()

    def leave_For(self, original_node: cst.For) -> None:
        self._leave_loop()

    def visit_While(self, node: cst.While) -> None:
        self.ctx.number(node, "while")
        self._enter_loop()

    def leave_While(self, original_node: cst.While) -> None:
        self._leave_loop()

    def visit_If(self, node: cst.If) -> None:
        self.ctx.number(node, "if")
        if len(self.functions) == 1 and not self.classes and is_main_guard(node.test):
            self.facts.runs_as_script = True
        if self.ifs and self.ifs[-1].orelse is node:  # an `elif`: the `if` above did not hold
            self.conditions[-1] = f"not ({self.conditions[-1]})"
        line = self.ctx.lines[self.ctx.span(node).line - 1].strip()
        text = condition_text(line)
        # a test over several lines (or one the line cannot give): written out from the node
        self.conditions.append(text if text is not None else self.ctx.code(node.test, 400))
        self.ifs.append(node)

    def leave_If(self, original_node: cst.If) -> None:
        self.conditions.pop()
        self.ifs.pop()

    # a conditional expression's branches run under its test, as an `if`'s blocks do
    # (`loss.mean() if reduction == "mean" else loss.sum()`)
    def visit_IfExp_body(self, node: cst.IfExp) -> None:
        self.conditions.append(self.ctx.code(node.test, 400))

    def leave_IfExp_body(self, node: cst.IfExp) -> None:
        self.conditions.pop()

    def visit_IfExp_orelse(self, node: cst.IfExp) -> None:
        self.conditions.append(f"not ({self.ctx.code(node.test, 400)})")

    def leave_IfExp_orelse(self, node: cst.IfExp) -> None:
        self.conditions.pop()

    def visit_Else(self, node: cst.Else) -> None:
        if self.ifs and self.ifs[-1].orelse is node:  # not a loop's or a try's `else`
            self.conditions[-1] = f"not ({self.conditions[-1]})"

    # -- statements ------------------------------------------------------------------------------
    def _enter_statement(self, node: AssignLike, targets: list[str]) -> None:
        if self.classes and len(self.functions) == self.class_depths[-1]:
            # a class body binds the class's attributes, not names of the enclosing scope: a
            # dataclass field `reduction: str = "mean"` is `Config.reduction`
            targets = [f"{self.classes[-1]}.{t}" for t in targets]
        self.statement = (targets, self.ctx.code(node))  # sliced from the source: cheap
        value = node.value
        if value is not None:
            if isinstance(node, cst.AugAssign):
                self._event("augassign", node, targets=targets, uses=names_in(value))
            else:
                paired = paired_names(node.targets, value) if isinstance(node, cst.Assign) else {}
                self._event("assign", node, targets=targets, uses=names_in(value),
                            value_names=value_names(value), paired=paired)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.ctx.number(node, "assign")
        if len(self.functions) == 1 and not self.classes:
            exports = literal_names(node)
            if exports is not None:
                self.facts.exports = exports
        self._enter_statement(node, [n for t in node.targets for n in target_names(t.target)])

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self.statement = None

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.ctx.number(node, "annassign")
        self._enter_statement(node, target_names(node.target))

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        self.statement = None

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.ctx.number(node, "augassign")
        self._enter_statement(node, target_names(node.target))

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self.statement = None

    def visit_Return(self, node: cst.Return) -> None:
        self.ctx.number(node, "return")
        if node.value is not None:
            self._event("return", node, uses=names_in(node.value), value_names=value_names(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        self.ctx.number(node, "call")
        if len(self.functions) == 1:
            self.facts.top_level_calls = True
        func = node.func
        receiver = method = ""
        if isinstance(func, cst.Attribute):
            receiver = expr_text(func.value, self.ctx)
            method = func.attr.value
        args: list[str] = []
        kwargs: dict[str, str] = {}
        for arg in node.args:
            text = expr_text(arg.value, self.ctx)
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = text
            elif arg.star:
                args.append(arg.star + text)
            else:
                args.append(text)
        self._event(
            "call",
            node,
            func=self.ctx.qualify(func) or expr_text(func, self.ctx),
            receiver=receiver,
            method=method,
            args=args,
            kwargs=kwargs,
            uses=names_in(node),
        )
        if method == "enter_context" and self.exit_stacks:
            self._entered(receiver, node)

    def _event(self, kind: str, node: cst.CSTNode, **data: object) -> None:
        context = [c for items in self.withs for c in items]
        if "<def>" in context:
            context = context[len(context) - context[::-1].index("<def>") :]
        targets, text = self.statement if self.statement else ([], "")
        text = str(data.pop("text", "")) or text
        data.setdefault("targets", list(targets))
        span = self.ctx.span(node)
        self.functions[-1].events.append(
            Event(
                kind=kind,
                span=span,
                context=context,
                loop_ids=list(self.loops),
                conditions=self.conditions[self.condition_base[-1]:],
                text=text or (self.ctx.line_text(span.line) if kind == "with" else self.ctx.code(node)),
                **data,  # type: ignore[arg-type]
            )
        )
