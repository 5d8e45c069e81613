"""Abstract values: what kind of object a name holds at one event of a function.

A small lattice, decided from the statement that last assigned the name (followed through plain
copies ``a = b``); instances of project classes are :meth:`Training.origins`' answer, with the
factory call sites that made them and one level of call-site context for parameters:

* ``NUMBER``  a Python number: a literal, ``.item()``, ``.size(0)``, ``len(...)``, ``float(...)``,
  numpy / sklearn / math results, and running sums of numbers (``total = 0`` then
  ``total += loss.item()``);
* ``DATA``    a tensor without autograd history: what a loop over a loader yields, DGL's node and
  edge data views (``g.ndata[k]``, ``g.nodes[t].data[k]``), results of ``.detach()``,
  ``argmax`` and integer casts, anything computed with gradients off;
* ``GRAD``    a tensor with autograd history: a module's output, a loss function's result,
  arithmetic on such a tensor, a project function returning one;
* ``UNKNOWN`` anything else (the lattice's top: rules keep their previous answer there).

A call of a project function has the kind its ``return`` statements give, joined (values
through returns: ``epoch_loss = self.train_epoch()`` is a number when every return is one).
Rules ask :func:`kind_at` (``Training`` supplies module calls, grad mode and call resolution).

Constants flow through configuration with :class:`Constants`, which a rule's per-file visitor
feeds as it walks (dict literals, ``dict(BASE, k=v)``, ``cfg.get("k", default)``).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Optional, Union

import libcst as cst

from auditor.static.config_files import SUFFIXES, tree_configs, tree_text
from auditor.static.dataflow import _bound, callers_of, definitions, statement_of
from auditor.static.facts import Event, FunctionInfo
from auditor.static.project import Project
from auditor.static.texts import outside_brackets, top_level_items
from auditor.static.training import NON_DIFFERENTIABLE, Training, outer_call, statement_start

NUMBER, DATA, GRAD, UNKNOWN = "number", "data", "grad", "unknown"
UNKNOWN_VALUE = object()  # what :class:`Constants` answers for a value it cannot know

# methods and functions whose result is a Python number (or a numpy value) whatever they get
NUMBER_METHODS = {"item", "tolist", "numpy", "size", "numel", "dim", "__len__"}
NUMBER_FUNCS = {"len", "float", "int", "bool"}  # (`sum`, `abs`, `max` of tensors are tensors)
NUMBER_MODULES = ("numpy.", "np.", "sklearn.", "math.", "scipy.", "statistics.")
_DATA_VIEW = re.compile(r"\.(ndata|edata|srcdata|dstdata)\b|\.(nodes|edges)\[[^\]]*\]\.data\b")
_DATA_VIEW_OF = re.compile(r"([\w.]+)\.(?:ndata|edata|srcdata|dstdata|(?:nodes|edges)\[[^\]]*\]\.data)\b")
MAX_DEPTH = 4


# a product over the node dimension (`z.T @ z`, `torch.mm(z1.T, z2)`): a feature x feature matrix,
# the same size whatever the batch; an identity matrix
_FIXED_SIZE = re.compile(
    r"(\.T|\.t\(\)|\.transpose\(\s*0\s*,\s*1\s*\))\s*@|"
    r"\b(mm|matmul)\(\s*[\w.]+(\.T|\.t\(\))\s*,|\.eye\(")
# `c = c / n`, `c = c.to(device)`: the same size as the tensor it rescales or moves
_SAME_SIZE = re.compile(r"^\s*([\w.]+)\s*([/*]\s*[\w.()\[\]]+|\.to\([^()]*\))\s*$")


def fixed_size(text: str) -> bool:
    """An expression whose size does not grow with the number of nodes in the batch (a Gram /
    cross-correlation matrix, an identity)."""
    return bool(_FIXED_SIZE.search(text))


def fixed_size_name(fn: FunctionInfo, name: str, index: int, depth: int = 0) -> bool:
    """Every value ``name`` may hold at statement ``index`` is :func:`fixed_size`, directly or
    rescaled (``c = torch.mm(z.T, z)`` then ``c = c / n``)."""
    found = definitions(fn, name, index)
    if not found or depth > MAX_DEPTH:
        return False
    for stmt in found:
        value = stmt.text.split("=", 1)[-1]
        same = _SAME_SIZE.match(value)
        if not (fixed_size(value) or same is not None
                and fixed_size_name(fn, same.group(1), stmt.index, depth + 1)):
            return False
    return True


def is_data_view(text: str) -> bool:
    """``g.ndata['x']`` / ``g.nodes['cell'].data['x']``: DGL feature storage, not ``Tensor.data``."""
    return bool(_DATA_VIEW.search(text))


def kind_at(t: Training, fn: FunctionInfo, name: str, i: int, depth: int = 0) -> str:
    """The kind of value ``name`` holds just before event ``i`` of ``fn``."""
    if depth > MAX_DEPTH:
        return UNKNOWN
    j = _last_assignment(fn, name, statement_start(fn, i) if i < len(fn.events) else i)
    if j is None:
        return UNKNOWN
    stmt = fn.events[j]
    if stmt.text.startswith(("for ", "async for ")):
        return DATA  # what iterating a loader / dataset / list yields
    if t.grad_off(fn, j) is not None:
        return DATA
    value = _AUGMENTED.split(stmt.text, 1)[-1] if stmt.kind == "augassign" else \
        stmt.text.split("=", 1)[-1] if "=" in stmt.text else ""
    if stmt.kind == "assign" and len(stmt.targets) > 1:
        parts = top_level_items(value.strip())
        if len(parts) == len(stmt.targets) and "(" not in parts[stmt.targets.index(name)]:
            # `SEED, ACCUM, LR = 0, 2, 0.005`: the element of the display
            return _expression_kind(t, fn, j, parts[stmt.targets.index(name)].strip(), depth + 1)
        # `loss, acc, opt = train_epoch(...)`: the element of what the callee returns
        k = _outer_call_index(fn, j)
        if k is None or not _one_term(value.strip()):
            return UNKNOWN
        return _returned_kind(t, fn, fn.events[k], depth, stmt.targets.index(name))
    kind = _expression_kind(t, fn, j, value.strip(), depth)
    if stmt.kind == "augassign":  # `total += x`: what `total` held, combined with `x`
        kind = _join(kind, kind_at(t, fn, name, j, depth + 1))
    return kind


_AUGMENTED = re.compile(r"[-+*/%@&|^]=|//=|\*\*=|>>=|<<=")
_NUMBER_LITERAL = re.compile(r"-?\s*\d[\d_]*(\.\d*)?([eE][-+]?\d+)?")


def _join(a: str, b: str) -> str:
    """Two kinds a name may hold on different paths (or that one operation combines)."""
    if a == b:
        return a
    if GRAD in (a, b):
        return GRAD
    if {a, b} == {NUMBER, DATA}:
        return DATA  # neither carries autograd history (`epoch_loss /= (iter + 1)`)
    return UNKNOWN


def _expression_kind(t: Training, fn: FunctionInfo, j: int, value: str, depth: int) -> str:
    """The kind of the expression ``value`` of statement event ``j`` (an assignment's value,
    an augmented assignment's operand, a return's)."""
    if _NUMBER_LITERAL.fullmatch(value):
        return NUMBER
    k = _outer_call_index(fn, j)
    if k is not None and _one_term(value):
        call = fn.events[k]
        func = call.func.removesuffix("()")
        if call.method in NUMBER_METHODS or func in NUMBER_FUNCS or func.startswith(NUMBER_MODULES):
            return NUMBER
        if call.method in NON_DIFFERENTIABLE:
            return DATA
        if t.module_call(fn, k) or "loss" in func.lower():
            return GRAD
        return _returned_kind(t, fn, call, depth)
    if is_data_view(value) and not re.search(r"\(", value):
        return DATA
    if re.fullmatch(r"[\w.]+", value or "-") and "." not in value:
        return kind_at(t, fn, value, j, depth + 1)
    terms = _plain_terms(value)
    if terms:  # arithmetic on names and literals: what its operands are, joined
        out = NUMBER
        for term in terms:
            out = _join(out, NUMBER if _NUMBER_LITERAL.fullmatch(term)
                        else kind_at(t, fn, term, j, depth + 1))
        return out
    return UNKNOWN


# calls whose result is a Python number whatever their argument: `len(targets)`, `x.size(0)`
_NUMBER_CALL = re.compile(
    rf"\b(?:{'|'.join(NUMBER_FUNCS)})\([^()]*\)|\b[\w.]+\.(?:{'|'.join(NUMBER_METHODS)})\([^()]*\)"
    rf"|\b(?:{'|'.join(re.escape(m) for m in NUMBER_MODULES)})[\w.]*\([^()]*\)"
    r"|\b[\w.]+\.shape\[[^\[\]]*\]")


def _plain_terms(value: str) -> list[str]:
    """The operands of an arithmetic expression made only of names, number literals and calls
    that give numbers (``(iter + 1)``, ``total / n``, ``acc / len(targets)``); empty for
    anything else."""
    while True:  # innermost calls first: `float(len(targets))`
        value, n = _NUMBER_CALL.subn("1", value)
        if not n:
            break
    terms = [x for x in re.split(r"[-+*/%()\s]+", value) if x]
    if len(terms) < 2 or re.search(r"[^\w\s.+\-*/%()]", value):
        return []
    if all(re.fullmatch(r"[A-Za-z_]\w*", x) or _NUMBER_LITERAL.fullmatch(x) for x in terms):
        return terms
    return []


def _returned_kind(t: Training, fn: FunctionInfo, call: Event, depth: int,
                   element: Optional[int] = None) -> str:
    """What the project functions a call runs return, joined over their ``return`` statements
    (``epoch_loss = self.train_epoch()`` that returns a sum of ``.item()`` values: a number);
    ``element``: the kind of that element of the tuple they return (``return loss, acc``)."""
    kinds: list[str] = []
    for qual in t.resolve(fn, call):
        callee = t.project.function(qual)
        if callee is None or callee.name == "__init__" or depth >= MAX_DEPTH:
            return UNKNOWN
        returns = [r for r, e in enumerate(callee.events) if e.kind == "return"]
        if not returns:
            continue  # returns None (an abstract base method the class overrides): no value
        for r in returns:
            value = callee.events[r].text.removeprefix("return").strip()
            if element is not None:
                parts = top_level_items(value)
                one = parts[element].strip() if len(parts) > element else ""
                others = [p.strip() for i, p in enumerate(parts) if i != element]
                if re.fullmatch(r"[A-Za-z_]\w*", one):
                    kinds.append(kind_at(t, callee, one, r, depth + 1))
                elif all(re.fullmatch(r"[\w.]+", p) for p in others):
                    # `return loss, accuracy(out, y)`: the statement's one call is this element's
                    kinds.append(_expression_kind(t, callee, r, one, depth + 1))
                else:
                    kinds.append(UNKNOWN)
            elif t.grad_off(callee, r) is not None:
                kinds.append(DATA)
            else:
                kinds.append(_expression_kind(t, callee, r, value, depth + 1) if value else UNKNOWN)
    if not kinds:
        return UNKNOWN
    out = kinds[0]
    for kind in kinds[1:]:
        out = _join(out, kind)
    return out


def holds_graph(t: Training, fn: FunctionInfo, name: str, i: int) -> bool:
    """False when ``name`` surely holds no autograd graph at event ``i`` (a number, a detached or
    data tensor); True otherwise (a rule's previous answer stands)."""
    return kind_at(t, fn, name, i) not in (NUMBER, DATA)


def _last_assignment(fn: FunctionInfo, name: str, before: int) -> Optional[int]:
    for j in range(min(before, len(fn.events)) - 1, -1, -1):
        e = fn.events[j]
        if e.kind in ("assign", "augassign") and name in e.targets:
            return j
    return None


def _outer_call_index(fn: FunctionInfo, j: int) -> Optional[int]:
    call = outer_call(fn, j)
    return next((k for k in range(j + 1, len(fn.events)) if fn.events[k] is call), None)


def _one_term(value: str) -> bool:
    """The statement's value is one call chain (``n = x.size(0)``), not an expression around a
    call (``loss = a.item() + b``): no operator outside brackets."""
    return bool(value) and not any(ch in "+-*/%@<>=|&" for ch in outside_brackets(value))


class Constants:
    """Constants of one file as a rule's visitor meets them (source order): module-level and
    local ``NAME = <constant>`` (parameters shadow them: a call decides). Values are
    literals, dict literals, ``dict(BASE, k=v)``; expressions ``X["k"]``, ``X.get("k", d)``,
    ``-x`` evaluate through them. ``evaluate`` answers :data:`UNKNOWN_VALUE` when it cannot."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = [{}]
        self.fallback = False

    # -- fed by a visitor, in source order -----------------------------------------------------
    def enter_function(self, node: cst.FunctionDef) -> None:
        # a parameter holds what each call passes: its default is no constant of the body
        params = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
        self.scopes.append({p.name.value: UNKNOWN_VALUE for p in params})

    def leave_function(self) -> None:
        self.scopes.pop()

    def assigned(self, node: Union[cst.Assign, cst.AugAssign]) -> None:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Name):
                if isinstance(node, cst.Assign):
                    self.bind(target.value, node.value)
                else:
                    self.forget(target.value)

    def bind(self, name: str, node: cst.BaseExpression) -> None:
        value = self.evaluate(node)
        if value is UNKNOWN_VALUE:
            self.forget(name)
        else:
            self.scopes[-1][name] = value

    def forget(self, name: str) -> None:
        """``name`` changed in a way not followed (``w += step``): no constant any more."""
        for scope in self.scopes:
            scope.pop(name, None)

    def evaluate(self, node: cst.BaseExpression, fallback: bool = False) -> Any:
        """``fallback``: ``m.get("k", d)`` on a mapping not known here answers its default ``d``
        (what the run uses unless its configuration sets ``k``) when the key ``"k"`` is known."""
        self.fallback = fallback
        return self._value(node)

    def _value(self, node: cst.BaseExpression) -> Any:
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                return float(node.value)
            except ValueError:
                return UNKNOWN_VALUE
        if isinstance(node, cst.SimpleString):
            return node.evaluated_value
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self._value(node.expression)
            return -inner if isinstance(inner, float) else UNKNOWN_VALUE
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.value]
            for scope in reversed(self.scopes):
                if node.value in scope:
                    return scope[node.value]
            return UNKNOWN_VALUE
        if isinstance(node, cst.Dict):
            out: dict[Any, Any] = {}
            for element in node.elements:
                if not isinstance(element, cst.DictElement):
                    return UNKNOWN_VALUE  # `**other`: keys unknown
                key = self._value(element.key)
                if key is UNKNOWN_VALUE:
                    return UNKNOWN_VALUE
                out[key] = self._value(element.value)
            return out
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 \
                and isinstance(node.slice[0].slice, cst.Index):
            base = self._value(node.value)
            key = self._value(node.slice[0].slice.value)
            return base.get(key, UNKNOWN_VALUE) if isinstance(base, dict) else UNKNOWN_VALUE
        if isinstance(node, cst.Call):
            return self._call(node)
        return UNKNOWN_VALUE

    def _call(self, node: cst.Call) -> Any:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "dict":
            out: dict[Any, Any] = {}
            for arg in node.args:
                if arg.keyword is not None:
                    out[arg.keyword.value] = self._value(arg.value)
                    continue
                base = self._value(arg.value)
                if not isinstance(base, dict):
                    return UNKNOWN_VALUE
                out.update(base)
            return out
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and node.args:
            base = self._value(func.value)
            key = self._value(node.args[0].value)
            default = self._value(node.args[1].value) if len(node.args) > 1 else None
            if isinstance(base, dict) and key is not UNKNOWN_VALUE:
                return base.get(key, default)
            # the default of a key read by name; a key known only at run time (`w.get(k, 0.0)`
            # over a loop's keys) may be any the mapping holds
            if self.fallback and base is UNKNOWN_VALUE and len(node.args) > 1 and isinstance(key, str):
                return default
        return UNKNOWN_VALUE


def config_default(project: Project, text: str) -> Any:
    """What ``cfg.get("k", d)`` / ``getattr(cfg, "k", d)`` (the expression ``text``) gives when
    nothing in the tree sets the key ``k`` (no ``"k": v`` entry, ``cfg["k"] = v``, ``k=v`` keyword
    or assignment, ``--k`` option): the default ``d``, which every run then uses.
    :data:`UNKNOWN_VALUE` for any other expression, or when the key is set somewhere."""
    try:
        node = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return UNKNOWN_VALUE
    if not isinstance(node, cst.Call) or len(node.args) != 2 + _is_getattr(node):
        return UNKNOWN_VALUE
    if not (_is_getattr(node) or (isinstance(node.func, cst.Attribute) and node.func.attr.value == "get")):
        return UNKNOWN_VALUE
    key_node, default_node = node.args[-2].value, node.args[-1].value
    constants = Constants()
    key, default = constants.evaluate(key_node), constants.evaluate(default_node)
    if not isinstance(key, str) or not re.fullmatch(r"\w+", key) or default is UNKNOWN_VALUE:
        return UNKNOWN_VALUE
    option = re.escape(key).replace("_", "[-_]")
    setting = re.compile(
        rf"""["']{re.escape(key)}["']\s*:|\[\s*["']{re.escape(key)}["']\s*\]\s*=(?!=)|"""
        rf"""\b{re.escape(key)}\s*=(?!=)|--{option}\b|setattr\([^,]+,\s*["']{re.escape(key)}["']""")
    if project.any_source_matches(setting):
        return UNKNOWN_VALUE
    # a configuration file of the tree that sets it (`precision: bf16` in YAML)
    written = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*[:=]""", re.MULTILINE)
    return UNKNOWN_VALUE if any(written.search(t) for t in _tree_config_texts(project)) else default


def _tree_config_texts(project: Project) -> list[str]:
    """The texts of the tree's configuration files under the folders of the project's files
    (read once per project)."""
    memo = project.memo("values.tree_configs")
    if "texts" not in memo:
        names = tree_configs(Path.cwd(), project.files, set(SUFFIXES.values()))
        memo["texts"] = [t for t in (tree_text(PurePosixPath(n), Path.cwd()) for n in names) if t]
    return memo["texts"]


def _is_getattr(node: cst.Call) -> bool:
    return isinstance(node.func, cst.Name) and node.func.value == "getattr"


# -- how many rows a value holds -------------------------------------------------------------------

def subscripts(text: str) -> list[str]:
    """The index texts of the subscripts in ``text`` (``x[mask]`` -> ``mask``; nested ones too:
    ``x[perm[:k]]`` gives ``perm[:k]`` and ``:k``)."""
    out: list[str] = []
    opened: list[int] = []
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            before = text[:i].rstrip()
            opened.append(i if before and (before[-1].isalnum() or before[-1] in "_)]") else -1)
        elif ch == "]" and opened:
            start = opened.pop()
            if start >= 0:
                out.append(text[start + 1:i])
    return out


def _first_index(index: str) -> str:
    """The first dimension's part of an index (``mask, :`` -> ``mask``)."""
    depth = 0
    for i, ch in enumerate(index):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            return index[:i].strip()
    return index.strip()


def _is_selection(fn: FunctionInfo, index: str, at: int) -> bool:
    """An index that picks a data-dependent set of rows: a mask or an index tensor (``mask``,
    ``mask_nodes``, ``idx[perm]``, ``mask.nonzero()``), not a slice, a constant, a key string or
    one row (a ``for i in range(n)`` counter)."""
    first = _first_index(index)
    if not first or ":" in first or first == "..." or first[0] in "'\"-" or first[0].isdigit() \
            or first in ("None", "True", "False"):
        return False
    if re.fullmatch(r"\w+", first):
        found = definitions(fn, first, at)
        if any(d.text.startswith(("for ", "async for ")) and re.search(r"\b(range|enumerate)\(", d.text)
               for d in found):
            return False  # one row per iteration
    return True


def varying_count(project: Project, fn: FunctionInfo, texts: Iterable[str], index: int,
                  depth: int = 0, seen: Optional[set[tuple[str, int, str]]] = None) -> Optional[str]:
    """What makes the number of rows in the value of ``texts`` (expressions of ``fn`` at statement
    ``index``) depend on the data: a mask or index selection (``x[mask_nodes]``), or the node
    data of a batched graph (``bg.ndata[...]`` of a graph a loop yields or ``dgl.batch``
    made); found in the texts, in the assignments they read (before ``index``), or in the
    arguments every caller passes for a parameter. None: nothing shows a varying count (a fixed
    batch of a loader, a whole tensor of constant size)."""
    seen = set() if seen is None else seen
    if depth > MAX_DEPTH:
        return None
    names: list[str] = []
    for text in texts:
        for sub in subscripts(text):
            if _is_selection(fn, sub, index):
                return f"the rows selected by `{_first_index(sub)}`"
        for view in _DATA_VIEW_OF.finditer(text):
            graph = view.group(1)
            if any(d.text.startswith(("for ", "async for ")) or "dgl.batch(" in d.text
                   for d in definitions(fn, graph, index)):
                return f"the nodes of the batched graph `{graph}`"
        names += [n for n in re.findall(r"(?<![\w.'\"])[A-Za-z_]\w*(?:\.\w+)*", text)
                  if n not in names]
    for name in names:
        key = (fn.qualname, index, name)
        if key in seen:
            continue
        seen.add(key)
        found = definitions(fn, name, index)
        for stmt in found:
            if stmt.text.startswith(("for ", "async for ")):
                continue
            value = stmt.text.split("=", 1)[-1] if stmt.kind in ("assign", "augassign") else ""
            hit = varying_count(project, fn, [value], stmt.index, depth + 1, seen) if value else None
            if hit:
                return hit
        if not found and name in fn.params and name not in ("self", "cls"):
            for caller, call in callers_of(project, fn.qualname)[:20]:
                pos = fn.params.index(name) - _bound(fn, call)
                arg = call.kwargs.get(name) or (call.args[pos] if 0 <= pos < len(call.args) else "")
                cstmt = statement_of(caller, call)
                if arg and cstmt is not None:
                    hit = varying_count(project, caller, [arg], cstmt.index, depth + 1, seen)
                    if hit:
                        return hit
    return None
