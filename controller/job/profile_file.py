"""The start-up profiles file (`tfjob-operator run|render --profiles FILE`): its schema and its checks.

```yaml
profiles:
- name: tf-2.16-and-later            # unique; named in every message about the entry
  image: "tensorflow/tensorflow*"    # glob on the image repository (Docker Hub without docker.io/)
  tag: "2.1[6-9]*"                   # glob on the tag (default "*")
  roles: [chief, worker]             # default: every role
  env: {TF_ENABLE_ONEDNN_OPTS: "0"}  # added unless the container sets the variable
  args: ["--log_every=100"]          # added unless the container's args hold the flag
```

A bad file stops the operator at start (and `render`) with one message naming the entry and the
field, so a typo never silently changes what every job runs with. Validated with `jsonschema`, plus
what a schema cannot say (unique names). Pure: the caller reads the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from controller.job.profiles import Profile
from tfconfig import ROLES

ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"  # what the API server accepts for an env var name

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["profiles"],
    "additionalProperties": False,
    "properties": {
        "profiles": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "image"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 253},
                    "image": {"type": "string", "minLength": 1},
                    "tag": {"type": "string", "minLength": 1},
                    "roles": {"type": "array", "minItems": 1, "uniqueItems": True,
                              "items": {"enum": list(ROLES)}},
                    "env": {"type": "object", "propertyNames": {"pattern": ENV_NAME},
                            "additionalProperties": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string", "minLength": 1}},
                },
                "anyOf": [{"required": ["env"]}, {"required": ["args"]}],
            },
        },
    },
}

_VALIDATOR = jsonschema.Draft7Validator(SCHEMA)


class ProfileError(ValueError):
    """A profiles file that cannot be used; the message names the entry and the field."""


def _where(document: Any, path: list[Any]) -> str:
    """`profiles[2] (tf-old).env` for a schema error's path."""
    if len(path) < 2 or path[0] != "profiles" or not isinstance(path[1], int):
        return ".".join(str(p) for p in path) or "the file"
    entry = document["profiles"][path[1]]
    name = entry.get("name") if isinstance(entry, Mapping) else None
    label = f"profiles[{path[1]}]" + (f" ({name})" if isinstance(name, str) and name else "")
    rest = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[2:])
    return label + rest


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "anyOf":
        return "needs env or args (a profile that adds nothing is a mistake)"
    if error.validator == "additionalProperties":
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        allowed = sorted(schema.get("properties") or {})
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        unknown = ", ".join(sorted(set(instance) - set(allowed)))
        return f"unknown field {unknown}; allowed: {', '.join(allowed)}"
    if "propertyNames" in error.schema_path:
        return f"{error.instance!r} is not a valid environment variable name"
    if error.validator == "enum":
        return f"{error.instance!r} is not a role; roles are {', '.join(ROLES)}"
    return error.message


def parse_profiles(document: Any) -> tuple[Profile, ...]:
    """The profiles of a parsed file, in order; ProfileError for the first problem found."""
    if document is None:
        raise ProfileError("the file is empty; it needs `profiles: [...]`")
    errors = sorted(_VALIDATOR.iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        error = errors[0]
        raise ProfileError(f"{_where(document, list(error.absolute_path))}: {_message(error)}")
    seen: dict[str, int] = {}
    profiles = []
    for index, entry in enumerate(document["profiles"]):
        name = entry["name"]
        if name in seen:
            raise ProfileError(f"profiles[{index}] ({name}).name: the name is already used by profiles[{seen[name]}]")
        seen[name] = index
        profiles.append(Profile(
            name=name, image=entry["image"], tag=entry.get("tag", "*"), roles=tuple(entry.get("roles") or ()),
            env=tuple((key, value) for key, value in (entry.get("env") or {}).items()),
            args=tuple(entry.get("args") or ())))
    return tuple(profiles)
