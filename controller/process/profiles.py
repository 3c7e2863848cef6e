"""Read the start-up profiles file given by `--profiles FILE` (run and render).

In a cluster the file is usually a ConfigMap mounted into the operator's pod (docs/production.md).
It is read once, at start: a changed file takes effect when the operator restarts, and only for
pods created from then on. Any problem -- unreadable, not YAML, a bad entry -- is one ProfileError
whose message names the file and the entry; `run` exits with it before touching the cluster.
"""

from __future__ import annotations

import yaml

from controller.job.profile_file import ProfileError, parse_profiles
from controller.job.profiles import Profile


def load_profiles(path: str | None) -> tuple[Profile, ...]:
    """The profiles of the file at `path`; none without a path."""
    if not path:
        return ()
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except OSError as error:
        raise ProfileError(f"{path}: cannot read: {error.strerror or error}") from error
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ProfileError(f"{path}: not valid YAML{where}: {getattr(error, 'problem', None) or error}") from error
    try:
        return parse_profiles(document)
    except ProfileError as error:
        raise ProfileError(f"{path}: {error}") from error
