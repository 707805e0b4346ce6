"""A small, safe expression language for rule conditions kept in data files.

Only literals, names from the facts, arithmetic, comparisons, boolean logic, ``in``,
conditional expressions and whitelisted functions; anything else is a DataError when
the rules are loaded, so a bad rule fails at load time, not in the middle of a plan.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from hangar.errors import DataError

_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMP: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "len": len,
    "any": any,
    "all": all,
    "cdiv": lambda a, b: -(-a // b),
    "gcd": math.gcd,
    "divides": lambda a, b: b != 0 and a % b == 0,
}


class Expression:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        try:
            self.tree = ast.parse(text, mode="eval").body
        except SyntaxError as exc:
            raise DataError(f"{where}: invalid expression {text!r}: {exc.msg}") from exc
        self._check(self.tree)

    def _check(self, node: ast.AST) -> None:
        allowed = (
            ast.Expression,
            ast.BoolOp,
            ast.BinOp,
            ast.UnaryOp,
            ast.Compare,
            ast.Call,
            ast.Name,
            ast.Constant,
            ast.Tuple,
            ast.List,
            ast.IfExp,
            ast.Load,
            ast.And,
            ast.Or,
            ast.Not,
            ast.USub,
            *_BIN,
            *_CMP,
        )
        for child in ast.walk(node):
            if not isinstance(child, allowed):
                raise DataError(
                    f"{self.where}: {type(child).__name__} not allowed in {self.text!r}"
                )
            if isinstance(child, ast.Call) and not (
                isinstance(child.func, ast.Name) and child.func.id in FUNCTIONS
            ):
                raise DataError(f"{self.where}: unknown function in {self.text!r}")

    def evaluate(self, facts: Mapping[str, Any]) -> Any:
        return _eval(self.tree, facts, self)


def _eval(node: ast.AST, facts: Mapping[str, Any], expr: Expression) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in facts:
            raise DataError(f"{expr.where}: unknown fact '{node.id}' in {expr.text!r}")
        return facts[node.id]
    if isinstance(node, ast.BoolOp):
        # short-circuit like Python: later operands are evaluated only when needed
        if isinstance(node.op, ast.And):
            return all(_eval(v, facts, expr) for v in node.values)
        return any(_eval(v, facts, expr) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, facts, expr)
        return (not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BinOp):
        return _BIN[type(node.op)](_eval(node.left, facts, expr), _eval(node.right, facts, expr))
    if isinstance(node, ast.Compare):
        left = _eval(node.left, facts, expr)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, facts, expr)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, facts, expr) else node.orelse, facts, expr)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_eval(e, facts, expr) for e in node.elts]
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*(_eval(a, facts, expr) for a in node.args))
    raise DataError(f"{expr.where}: cannot evaluate {ast.dump(node)}")
