"""Validate a TensorFlowJob the way admission does, plus what admission cannot know.

Three layers, all reporting `Problem(path, message)` with a dotted field path:
1. shape: apiVersion/kind/name;
2. the CRD's own OpenAPI schema (one source of truth) through `jsonschema`, made strict the way
   the API server's field validation is (unknown fields are errors);
3. the CEL rules of the CRD re-stated in Python (the same wording), and semantic checks that need
   the defaulted job (ports, success policy against the roles present).
Every message says what is wrong and what is allowed, so `tfjob-operator validate` and the job's
`Failed` condition can show it as is.

Only pure functions of the document live here, so `tfjob-operator validate` and the tests need no
state. The running controller asks again and again about the same unchanged job; its answer is
remembered per job by `controller.memory.JobMemory.validated` and dropped with the job's `forget`,
like everything else the controller remembers about a job.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import jsonschema

from tfconfig import ROLES, role_port, role_replicas
from tfjob_api.crd import job_schema
from tfjob_api.defaults import apply_defaults
from tfjob_api.names import API_VERSION, KIND
from tfjob_api.schema import IN_WITHOUT_ZERO, RULE_NEEDS_A_CRITERION

DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_DNS_LABEL = 63


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def validate_job(job: Any) -> list[Problem]:
    """Every problem found in one job document; empty when it is valid.

    The status is not the user's input (the API server ignores it on create and update; only the
    operator writes it through the status subresource), so it is not validated. Pure: the
    controller remembers the answer per job (`controller.memory.JobMemory.validated`), because it
    validates the same unchanged job on every pod event of a burst and every resync pass."""
    return _validate(without_status(job))


def without_status(document: Any) -> Any:
    """The document as its author wrote it: the status is the operator's, and never validated."""
    if isinstance(document, Mapping) and "status" in document:
        return {k: v for k, v in document.items() if k != "status"}
    return document


def _validate(job: Any) -> list[Problem]:
    if not isinstance(job, Mapping):
        return [Problem("", f"a TensorFlowJob must be a mapping, got {_json_type(job)}")]
    problems = _check_identity(job)
    problems += _check_schema(job)
    if problems:
        return problems
    return _check_semantics(apply_defaults(job))


def _check_identity(job: Mapping[str, Any]) -> list[Problem]:
    problems = []
    if job.get("apiVersion") != API_VERSION:
        problems.append(Problem("apiVersion", f"must be {API_VERSION!r}, got {job.get('apiVersion')!r}"))
    if job.get("kind") != KIND:
        problems.append(Problem("kind", f"must be {KIND!r}, got {job.get('kind')!r}"))
    name = (job.get("metadata") or {}).get("name") if isinstance(job.get("metadata"), Mapping) else None
    if not isinstance(name, str) or not name:
        problems.append(Problem("metadata.name", "required: the job needs a name"))
    return problems


# ---- schema -------------------------------------------------------------------------------------

# JSON Schema (draft 6+) counts 1.0 as an integer; Kubernetes does not. (`extend` is untyped upstream:
# it returns a validator class.)
_extend = cast(Callable[..., type[jsonschema.protocols.Validator]], jsonschema.validators.extend)
_KubernetesValidator = _extend(
    jsonschema.Draft7Validator,
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    ),
)


def prepare() -> None:
    """Load the CRD schema and build the validator now (the operator calls this at start), so the
    first reconciles of a burst do not pay for it."""
    _strict_validator()


@functools.cache
def _strict_validator() -> jsonschema.protocols.Validator:
    return strict_validator(job_schema())


def strict_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator of a CRD's structural schema as the API server applies it (unknown fields are
    errors, 1.0 is no integer): the TFJob kind's validation uses it with its own CRD's schema."""
    return _KubernetesValidator(_strict(schema))


def schema_problems(validator: jsonschema.protocols.Validator, document: Mapping[str, Any]) -> list[Problem]:
    """Every schema error of a document, as problems with dotted field paths and plain messages."""
    errors = sorted(validator.iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    return [_problem_from_schema_error(error) for error in errors]


def _strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Translate the structural schema's Kubernetes extensions into plain JSON Schema."""
    out = {k: copy.deepcopy(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if out.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    out.pop("nullable", None)
    out.pop("default", None)
    if "properties" in out:
        out["properties"] = {name: _strict(sub) for name, sub in out["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in out:
            out["additionalProperties"] = False
    if isinstance(out.get("additionalProperties"), Mapping):
        out["additionalProperties"] = _strict(out["additionalProperties"])
    if isinstance(out.get("items"), Mapping):
        out["items"] = _strict(out["items"])
    return out


def _check_schema(job: Mapping[str, Any]) -> list[Problem]:
    return schema_problems(_strict_validator(), job)


def _problem_from_schema_error(error: jsonschema.ValidationError) -> Problem:
    path = _field_path(error.absolute_path)
    value = error.instance
    keyword = error.validator
    if keyword == "required":
        missing = re.search(r"'([^']+)' is a required property", error.message)
        field = missing.group(1) if missing else "?"
        return Problem(_join(path, field), "required field is missing")
    if keyword == "additionalProperties":
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        allowed = sorted((schema.get("properties") or {}).keys())
        unknown = sorted(set(value) - set(allowed)) if isinstance(value, Mapping) else []
        shown = ", ".join(allowed[:12]) + (", ..." if len(allowed) > 12 else "")
        return Problem(_join(path, ",".join(unknown)), f"unknown field; allowed here: {shown}")
    if keyword == "enum":
        choices = error.validator_value if isinstance(error.validator_value, list) else []
        return Problem(path, f"{value!r} is not allowed; must be one of {', '.join(repr(v) for v in choices)}")
    if keyword == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return Problem(path, f"must be of type {expected_text}, got {_json_type(value)} ({_short(value)})")
    if keyword == "minimum":
        return Problem(path, f"{value} is below the minimum of {error.validator_value}")
    if keyword == "maximum":
        return Problem(path, f"{value} is above the maximum of {error.validator_value}{_maximum_hint(path)}")
    if keyword == "minItems":
        return Problem(path, f"needs at least {error.validator_value} item(s)")
    if keyword == "maxItems":
        return Problem(path, f"has more than the maximum of {error.validator_value} items")
    if keyword == "pattern" and error.validator_value == "^/":
        return Problem(path, f"{value!r} must be an absolute path (starting with /)")
    if keyword == "minLength":
        return Problem(path, "must not be empty" if error.validator_value == 1
                       else f"is shorter than the minimum of {error.validator_value} characters")
    if keyword == "maxLength":
        return Problem(path, f"is longer than the maximum of {error.validator_value} characters")
    return Problem(path, error.message)


def _maximum_hint(path: str) -> str:
    if path in ("spec.chief.replicas", "spec.evaluator.replicas"):
        return f" (a job has at most one {path.split('.')[1]})"
    return ""


# ---- semantics (the CEL rules, and what needs the defaulted job) ----------------------------------

def name_problems(name: str) -> list[Problem]:
    """The job's name names its headless Service: a DNS-1035 label."""
    if DNS_1035_LABEL.match(name) and len(name) <= MAX_DNS_LABEL:
        return []
    return [Problem(
        "metadata.name",
        f"{name!r} must be a DNS-1035 label (lower case letters, digits and '-', starting with a letter, "
        "at most 63 characters): it names the job's headless Service",
    )]


def pod_name_problems(job_name: str, role: str, replicas: int) -> list[Problem]:
    """The longest pod name of a role is its hostname: a DNS label."""
    longest = f"{job_name}-{role}-{max(replicas - 1, 0)}"
    if replicas == 0 or len(longest) <= MAX_DNS_LABEL:
        return []
    return [Problem(
        "metadata.name",
        f"is too long: the pod name {longest!r} has {len(longest)} characters, at most 63 are allowed "
        f"(it is the pod's hostname)",
    )]


def _check_semantics(job: Mapping[str, Any]) -> list[Problem]:
    spec = job["spec"]
    name = job["metadata"]["name"]
    problems: list[Problem] = []
    if role_replicas(spec, "chief") == 0 and role_replicas(spec, "worker") == 0:
        problems.append(Problem("spec", "at least one of spec.chief or spec.worker must have replicas > 0"))
    problems += name_problems(name)
    for role in ROLES:
        problems += _check_role(name, spec, role)
    if spec.get("successPolicy") == "AllWorkers" and role_replicas(spec, "worker") == 0:
        problems.append(Problem("spec.successPolicy", "AllWorkers needs spec.worker with replicas > 0"))
    problems += _check_network_policy(spec.get("networkPolicy") or {})
    problems += _check_failure_policy(spec)
    return problems


def _check_failure_policy(spec: Mapping[str, Any]) -> list[Problem]:
    """The CRD's rules on `spec.failurePolicy.rules`, in the same words (with the rule's index)."""
    problems = []
    for index, rule in enumerate((spec.get("failurePolicy") or {}).get("rules") or []):
        path = f"spec.failurePolicy.rules[{index}]"
        if not any(key in rule for key in ("roles", "onExitCodes", "onPodConditions", "onReasons")):
            problems.append(Problem(path, RULE_NEEDS_A_CRITERION))
        codes = rule.get("onExitCodes") or {}
        if codes.get("operator") == "In" and 0 in (codes.get("values") or []):
            problems.append(Problem(f"{path}.onExitCodes.values", IN_WITHOUT_ZERO))
        missing = [role for role in rule.get("roles") or [] if role not in spec]
        if missing:
            problems.append(Problem(f"{path}.roles", f"names {', '.join(missing)}, not a role of this job "
                                    f"(it has {', '.join(r for r in ROLES if r in spec)})"))
    return problems


PEER_RULE_MESSAGE = "a peer is either an ipBlock, or a podSelector and/or a namespaceSelector"


def _check_network_policy(policy: Mapping[str, Any]) -> list[Problem]:
    """The CRD's rule on every allowFrom peer, and CIDRs the API server would refuse in the policy."""
    problems = []
    for index, peer in enumerate(policy.get("allowFrom") or []):
        path = f"spec.networkPolicy.allowFrom[{index}]"
        selectors = "podSelector" in peer or "namespaceSelector" in peer
        if ("ipBlock" in peer) == selectors:
            problems.append(Problem(path, PEER_RULE_MESSAGE))
        block = peer.get("ipBlock") or {}
        for where, text in [("cidr", block.get("cidr")), *((f"except[{i}]", t) for i, t in
                                                          enumerate(block.get("except") or []))]:
            if text is None:
                continue
            try:  # the API server wants a prefix length: a bare address is not a CIDR there
                valid = "/" in str(text) and ipaddress.ip_network(text, strict=False) is not None
            except ValueError:
                valid = False
            if not valid:
                problems.append(Problem(f"{path}.ipBlock.{where}", f"{text!r} is not a CIDR (e.g. 10.0.0.0/16)"))
    return problems


def _check_stall(role: str, stall: Mapping[str, Any]) -> list[Problem]:
    """The CRD's rules on `stall`, in the same words."""
    http = stall.get("heartbeat", "file") == "http"
    if http and "port" not in stall:
        return [Problem(f"spec.{role}.stall.port", "port is required with heartbeat: http")]
    if not http and "port" in stall:
        return [Problem(f"spec.{role}.stall.port", "port is only used with heartbeat: http")]
    return []


def _check_role(job_name: str, spec: Mapping[str, Any], role: str) -> list[Problem]:
    replicas = role_replicas(spec, role)
    if role not in spec:
        return []
    problems = pod_name_problems(job_name, role, replicas)
    if spec[role].get("stall") is not None:
        problems += _check_stall(role, spec[role]["stall"])
    port = role_port(spec[role])
    if not 1 <= port <= 65535:
        problems.append(Problem(
            f"spec.{role}.template.spec.containers", f"tfjob-port {port} is not a valid port (1-65535)"
        ))
    return problems


# ---- helpers ---------------------------------------------------------------------------------

def _field_path(parts: Iterable[Any]) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
