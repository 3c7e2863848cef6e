"""Argo Workflows' `successCondition` / `failureCondition`: label-selector requirements on JSON paths.

An Argo `resource` template (and Kubeflow Pipelines v1's `ResourceOp`, compiled to one) waits on
the object it created with two strings such as `status.state == Succeeded` and
`status.state in (Failed)`. Argo parses each with Kubernetes' label-selector parser
(`labels.Parse`) and matches every requirement against the object's JSON, reading a "label" as a
gjson path (`status.replicaStatuses.worker.succeeded`). The step **fails** as soon as *any*
failure requirement matches, and **succeeds** once *all* success requirements match; otherwise
it polls again. This module is that evaluator, so a pipeline's conditions can be checked against
real job statuses without Argo, and `TfJobClient.wait_for` can take the same strings.

Grammar (as in apimachinery's selector parser): requirements separated by commas; each is
`key`, `!key`, `key = v`, `key == v`, `key != v`, `key in (v1, v2)`, `key notin (v1, v2)`,
`key > n` or `key < n` (integers). Keys must be valid label keys and values valid label values.
Matching (as `labels.Requirement.Matches`): `=`, `==`, `in` need the path to exist with one of the
values; `!=` and `notin` hold when it is missing or has none of them; `>`/`<` need an integer.
Paths follow gjson: dot-separated keys, numeric array indexes, `#` for an array's length, `\\.`
for a literal dot; a value reads as gjson's `String()` (numbers as written, true/false, null as '').
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Conditions", "Requirement", "SelectorError", "lookup", "parse"]


class SelectorError(ValueError):
    """A condition string that Kubernetes' label-selector parser would reject."""


_OPERATORS = ("in", "notin", "=", "==", "!=", ">", "<")
_SYMBOLS = ("!=", "==", "!", "=", ">", "<", "(", ")", ",")
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INTEGER = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class Requirement:
    """One requirement: `key operator values` (operator one of exists, !, =, ==, !=, in, notin, >, <)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, obj: Any) -> bool:
        found, value = lookup(obj, self.key)
        op = self.operator
        if op == "exists":
            return found
        if op == "!":
            return not found
        if op in ("=", "==", "in"):
            return found and value in self.values
        if op in ("!=", "notin"):
            return not found or value not in self.values
        if not found or not _INTEGER.match(value):
            return False
        return int(value) > int(self.values[0]) if op == ">" else int(value) < int(self.values[0])

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("in", "notin"):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        return f"{self.key}{self.operator}{self.values[0]}"


def _tokens(text: str) -> list[str]:
    """Symbols (longest first) and identifiers (runs of anything else but blanks)."""
    tokens: list[str] = []
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
        if symbol is not None:
            tokens.append(symbol)
            i += len(symbol)
            continue
        j = i
        while j < len(text) and not text[j].isspace() and text[j] not in "!=<>(),":
            j += 1
        tokens.append(text[i:j])
        i = j
    return tokens


def _identifier(token: str | None) -> bool:
    return token is not None and token not in _SYMBOLS


def _check_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if not name or len(name) > 63 or not _NAME.match(name) or (
            slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))):
        raise SelectorError(f"invalid key {key!r}: a label key (a path like status.state)")


def _check_value(value: str) -> None:
    if len(value) > 63 or (value and not _NAME.match(value)):
        raise SelectorError(f"invalid value {value!r}: a label value (letters, digits, '-', '_', '.')")


class _Parser:
    """apimachinery's selector parser, step for step (its error cases included)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.i += 1
        return token

    def fail(self, found: str | None, expected: str) -> SelectorError:
        return SelectorError(f"{self.text!r}: found {found or 'end of string'!r}, expected {expected}")

    def parse(self) -> tuple[Requirement, ...]:
        found: list[Requirement] = []
        while self.peek() is not None:
            if not (_identifier(self.peek()) or self.peek() == "!"):
                raise self.fail(self.peek(), "'!', an identifier or the end")
            found.append(self.requirement())
            token = self.take()
            if token is None:
                break
            if token != ",":
                raise self.fail(token, "',' or the end")
            if not (_identifier(self.peek()) or self.peek() == "!"):
                raise self.fail(self.peek(), "an identifier after ','")
        return tuple(found)

    def requirement(self) -> Requirement:
        token = self.take()
        absent = token == "!"
        if absent:
            token = self.take()
        if not _identifier(token):
            raise self.fail(token, "an identifier")
        assert token is not None
        key = token
        _check_key(key)
        if self.peek() in (None, ","):
            return Requirement(key, "!" if absent else "exists")
        if absent:
            raise self.fail(self.peek(), "',' or the end after '!key'")
        op = self.take()
        if op not in _OPERATORS:
            raise self.fail(op, f"one of {', '.join(_OPERATORS)}")
        values = self.value_set() if op in ("in", "notin") else self.exact_value()
        if op in ("in", "notin") and not values:
            raise SelectorError(f"{self.text!r}: {op} needs at least one value")
        if op in (">", "<") and not _INTEGER.match(values[0]):
            raise SelectorError(f"{self.text!r}: {op} needs an integer, found {values[0]!r}")
        for value in values:
            _check_value(value)
        return Requirement(key, op, values)

    def exact_value(self) -> tuple[str, ...]:
        if self.peek() in (None, ","):
            return ("",)
        token = self.take()
        if not _identifier(token):
            raise self.fail(token, "an identifier")
        assert token is not None
        return (token,)

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise self.fail(self.tokens[self.i - 1] if self.i <= len(self.tokens) else None, "'('")
        if self.peek() == ")":  # `in ()` is the empty value
            self.take()
            return ("",)
        values: set[str] = set()
        while True:
            token = self.take()
            if _identifier(token):
                assert token is not None
                values.add(token)
                if self.peek() == ",":
                    continue
                if self.peek() == ")":
                    break
                raise self.fail(self.peek(), "',' or ')'")
            if token == ",":  # `(,`, `,,` and `,)` hold the empty value
                if not values:
                    values.add("")
                if self.peek() == ")":
                    values.add("")
                    break
                if self.peek() == ",":
                    self.take()
                    values.add("")
                continue
            raise self.fail(token, "',' or an identifier")
        if self.take() != ")":
            raise self.fail(None, "')'")
        return tuple(sorted(values))


def parse(text: str) -> tuple[Requirement, ...]:
    """The requirements of a condition string; raises SelectorError for what `labels.Parse` rejects."""
    return _Parser(text).parse()


def _path_parts(path: str) -> list[str]:
    parts, current, escaped = [], "", False
    for ch in path:
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ".":
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def _as_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def lookup(obj: Any, path: str) -> tuple[bool, str]:
    """(exists, value as a string) of a gjson-style path in a JSON value."""
    current = obj
    for part in _path_parts(path):
        if isinstance(current, Mapping):
            if part not in current:
                return False, ""
            current = current[part]
        elif isinstance(current, list):
            if part == "#":
                current = len(current)
            elif part.isdigit() and int(part) < len(current):
                current = current[int(part)]
            else:
                return False, ""
        else:
            return False, ""
    return True, _as_string(current)


@dataclass(frozen=True)
class Conditions:
    """A success and a failure condition, evaluated as Argo's resource template does."""

    success: tuple[Requirement, ...] = ()
    failure: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, success: str | None = None, failure: str | None = None) -> Conditions:
        return cls(parse(success) if success else (), parse(failure) if failure else ())

    def failed(self, obj: Any) -> Requirement | None:
        """The first failure requirement that matches (the step fails), or None."""
        return next((r for r in self.failure if r.matches(obj)), None)

    def succeeded(self, obj: Any) -> bool:
        """Whether every success requirement matches; with none, at once, as Argo's resource step
        decides (0 of 0 requirements matched), once no failure condition matched first."""
        return all(r.matches(obj) for r in self.success)

    def outcome(self, obj: Any) -> str | None:
        """`failed`, `succeeded` or None (keep waiting); failure is checked first, as in Argo."""
        if self.failed(obj) is not None:
            return "failed"
        return "succeeded" if self.succeeded(obj) else None
