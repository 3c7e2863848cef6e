"""Unit tests of the client boundary `kube/`.

Scope: path building and parsing, error classification (ApiException, Status bodies, transport
errors), how requests are handed to the http.client pool (mocked with pytest-mock; the pool itself
is tested in test_transport.py) or, through a proxy, to the generic `ApiClient.call_api`,
client-side throttling with a fake clock, discovery caching, configuration loading, and watch
streams (fake responses, plus one tiny local HTTP server to prove `close()` unblocks a reader).
The real API server is exercised in tests/integration/test_informers.py.
"""

from __future__ import annotations

import json
import pickle
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from pytest_mock import MockerFixture

from kube import ApiError, ConfigError, Kube, TokenBucket, WatchStream, parse_path, resource_path
from kube import client as kube
from kube.clock import FakeClock
from kube.transport import ConnectFailed, Response
from tests.support.held_open import held_open_server

# --- helpers ---------------------------------------------------------------------------------------


def status_body(code: int, reason: str, message: str = "", **details: Any) -> bytes:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    if reason:
        body["reason"] = reason
    if message:
        body["message"] = message
    if details:
        body["details"] = details
    return json.dumps(body).encode()


def api_exception(status: int, body: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    exc = kube.ApiException(status=status, reason="HTTP reason phrase")
    exc.body = body
    exc.headers = headers
    return exc


class FakeResponse:
    """Enough of urllib3.HTTPResponse for Kube.request and WatchStream."""

    def __init__(self, status: int = 200, data: bytes = b"", chunks: list[bytes] | None = None) -> None:
        self.status = status
        self.data = data
        self.chunks = chunks or []
        self.closed = False
        self.released = False

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        yield from self.chunks

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released = True


@pytest.fixture
def client() -> Iterator[Kube]:
    k = Kube.for_host("http://127.0.0.1:9")
    yield k
    k.close()


# --- paths -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("", "v1", "pods", "ns", "p"), "/api/v1/namespaces/ns/pods/p"),
        (("", "v1", "pods", "ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status"),
        (("", "v1", "nodes"), "/api/v1/nodes"),
        (("", "v1", "pods"), "/api/v1/pods"),
        (("kubeflow.org", "v1", "tensorflowjobs"), "/apis/kubeflow.org/v1/tensorflowjobs"),
        (("kubeflow.org", "v1", "tensorflowjobs", "a", "j", "scale"), "/apis/kubeflow.org/v1/namespaces/a/tensorflowjobs/j/scale"),
        (("coordination.k8s.io", "v1", "leases", "kube-system"), "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"),
    ],
)
def test_resource_path_builds_core_and_group_paths(args: tuple[str, ...], expected: str) -> None:
    assert resource_path(*args) == expected


def test_resource_path_rejects_a_subresource_without_a_name() -> None:
    with pytest.raises(ValueError, match="subresource"):
        resource_path("", "v1", "pods", "ns", None, "status")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/v1/namespaces/ns/pods/p/status", ("", "v1", "ns", "pods", "p", "status")),
        ("/api/v1/pods", ("", "v1", None, "pods", None, None)),
        ("/api/v1/namespaces/ns", ("", "v1", None, "namespaces", "ns", None)),
        ("/api/v1/namespaces/ns/finalize", ("", "v1", None, "namespaces", "ns", "finalize")),
        ("/api/v1/namespaces/ns/services", ("", "v1", "ns", "services", None, None)),
        ("/apis/kubeflow.org/v1/tensorflowjobs?watch=true", ("kubeflow.org", "v1", None, "tensorflowjobs", None, None)),
        ("/apis/apps/v1/namespaces/a/deployments/d/scale", ("apps", "v1", "a", "deployments", "d", "scale")),
    ],
)
def test_parse_path_inverts_resource_path(path: str, expected: tuple[Any, ...]) -> None:
    assert tuple(parse_path(path) or ()) == expected


@pytest.mark.parametrize("path", ["/version", "/api/v1", "/apis/kubeflow.org/v1", "/healthz"])
def test_parse_path_returns_none_for_non_resource_paths(path: str) -> None:
    assert parse_path(path) is None


# --- error classification --------------------------------------------------------------------------

CLASSIFICATION = [
    # id, status, body, expected true properties
    ("404", 404, status_body(404, "NotFound", 'pods "x" not found'), {"not_found"}),
    ("409 conflict", 409, status_body(409, "Conflict", "the object has been modified"), {"conflict"}),
    ("409 uid precondition", 409, status_body(409, "Conflict", "Precondition failed: UID in precondition"), {"conflict"}),
    ("409 exists", 409, status_body(409, "AlreadyExists", 'pods "x" already exists'), {"already_exists"}),
    ("422", 422, status_body(422, "Invalid", "spec.containers: Required value"), {"invalid"}),
    ("410 expired", 410, status_body(410, "Expired", "too old resource version"), {"gone"}),
    ("410 gone", 410, status_body(410, "Gone", "continue token expired"), {"gone"}),
    ("403", 403, status_body(403, "Forbidden", "pods is forbidden: User cannot list"), {"forbidden"}),
    (
        "403 quota",
        403,
        status_body(403, "Forbidden", 'pods "p" is forbidden: exceeded quota: q, requested: pods=1'),
        {"forbidden", "quota_exceeded"},
    ),
    (
        "403 namespace terminating",
        403,
        status_body(403, "Forbidden", 'pods "p" is forbidden: unable to create new content in namespace n because it '
                    "is being terminated", name="p", kind="pods",
                    causes=[{"reason": "NamespaceTerminating", "message": "namespace n is being terminated",
                             "field": "metadata.namespace"}]),
        {"forbidden", "namespace_terminating"},
    ),
    ("401", 401, status_body(401, "Unauthorized", "Unauthorized"), {"unauthorized"}),
    ("429", 429, status_body(429, "TooManyRequests", "too many requests"), {"too_many_requests", "transient"}),
    ("500", 500, status_body(500, "InternalError", "boom"), {"transient"}),
    ("500 server timeout", 500, status_body(500, "ServerTimeout", "took too long"), {"transient", "timeout"}),
    ("502", 502, b"<html>bad gateway</html>", {"transient"}),
    ("503", 503, status_body(503, "ServiceUnavailable", "unavailable"), {"transient"}),
    ("504", 504, status_body(504, "Timeout", "timed out"), {"transient", "timeout"}),
    ("400", 400, status_body(400, "BadRequest", "bad"), set()),
]
PROPERTIES = {
    "not_found", "conflict", "already_exists", "invalid", "gone", "forbidden", "quota_exceeded",
    "unauthorized", "too_many_requests", "transient", "timeout", "namespace_terminating",
}


@pytest.mark.parametrize(("status", "body", "expected"), [c[1:] for c in CLASSIFICATION], ids=[c[0] for c in CLASSIFICATION])
def test_api_exception_is_classified_by_status_and_reason(status: int, body: bytes, expected: set[str]) -> None:
    err = ApiError.from_api_exception(api_exception(status, body), method="GET", path="/api/v1/pods")
    assert err.status == status
    assert {p for p in PROPERTIES if getattr(err, p)} == expected


def test_status_body_supplies_reason_message_and_body() -> None:
    err = ApiError.from_api_exception(api_exception(409, status_body(409, "AlreadyExists", 'pods "x" already exists')))
    assert err.reason == "AlreadyExists"
    assert err.message == 'pods "x" already exists'
    assert err.body is not None and err.body["kind"] == "Status"


def test_reason_defaults_from_the_status_code_without_a_status_body() -> None:
    err = ApiError.from_api_exception(api_exception(404, b"404 page not found"))
    assert (err.reason, err.message, err.body) == ("NotFound", "404 page not found", None)


def test_non_status_bodies_are_truncated_and_not_kept() -> None:
    err = ApiError.from_api_exception(api_exception(500, b"x" * 5000))
    assert len(err.message) == 256
    assert err.body is None


def test_retry_after_comes_from_the_header() -> None:
    err = ApiError.from_api_exception(api_exception(429, status_body(429, "TooManyRequests"), {"Retry-After": "3"}))
    assert err.retry_after == 3.0


def test_retry_after_comes_from_status_details() -> None:
    err = ApiError.from_api_exception(api_exception(429, status_body(429, "TooManyRequests", retryAfterSeconds=7)))
    assert err.retry_after == 7.0


def test_an_http_date_retry_after_is_ignored() -> None:
    err = ApiError.from_api_exception(
        api_exception(503, b"", {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})
    )
    assert err.retry_after is None


def test_watch_error_event_status_is_gone() -> None:
    err = ApiError.from_status({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 1 (5)"})
    assert err.gone and not err.transient


def test_too_large_resource_version_is_recognised() -> None:
    body = status_body(504, "Timeout", "Too large resource version: 10, current: 5", causes=[{"reason": "ResourceVersionTooLarge"}])
    err = ApiError.from_api_exception(api_exception(504, body))
    assert err.too_large_resource_version and err.transient


def test_transport_errors_are_status_zero_and_transient() -> None:
    err = ApiError.from_transport(urllib3.exceptions.ProtocolError("Connection aborted."), method="GET", path="/x")
    assert (err.status, err.reason, err.transient) == (0, "ProtocolError", True)


def test_read_timeouts_are_timeouts() -> None:
    err = ApiError.from_transport(urllib3.exceptions.ReadTimeoutError(None, "/x", "Read timed out."))  # type: ignore[arg-type]
    assert err.timeout and err.transient and err.status == 0


def test_max_retry_error_is_unwrapped_to_its_reason() -> None:
    inner = urllib3.exceptions.NewConnectionError(None, "refused")  # type: ignore[arg-type]
    err = ApiError.from_transport(urllib3.exceptions.MaxRetryError(None, "/x", inner))  # type: ignore[arg-type]
    assert err.reason == "NewConnectionError" and err.transient


def test_api_error_survives_pickling() -> None:
    err = ApiError(429, "TooManyRequests", "slow down", retry_after=2.0, method="GET", path="/api/v1/pods")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.status, copy.reason, copy.message, copy.retry_after, copy.path) == (429, "TooManyRequests", "slow down", 2.0, "/api/v1/pods")


def test_str_names_the_request_and_the_reason() -> None:
    err = ApiError(404, "", "gone away", method="DELETE", path="/api/v1/namespaces/a/pods/p")
    assert str(err) == "DELETE /api/v1/namespaces/a/pods/p: 404 NotFound: gone away"


# --- requests through the http.client pool ---------------------------------------------------------


INVALID_POD = status_body(422, "Invalid", 'Pod "p" is invalid: spec.containers: Required value')


def answer(status: int = 200, body: bytes = b"", headers: dict[str, str] | None = None) -> Response:
    return Response(status, "reason phrase", headers or {}, body)


def sent(call: Any) -> dict[str, Any]:
    """What one mocked pool request was asked to send: method, target, decoded body, headers, timeouts."""
    method, target = call.args
    body = call.kwargs["body"]
    return {"method": method, "target": target, "body": json.loads(body) if body is not None else None,
            "headers": call.kwargs["headers"], "read_timeout": call.kwargs["read_timeout"],
            "connect_timeout": call.kwargs["connect_timeout"]}


def test_request_sends_path_query_and_json_headers_and_decodes_the_answer(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._pool, "request", return_value=answer(200, b'{"kind":"Pod"}'))
    assert client.get("/api/v1/namespaces/a/pods/p", resource_version="0") == {"kind": "Pod"}
    request = sent(call.call_args)
    assert (request["method"], request["target"], request["body"]) == ("GET", "/api/v1/namespaces/a/pods/p?resourceVersion=0", None)
    assert request["headers"]["Accept"] == "application/json"
    assert request["headers"]["User-Agent"] == client._api.user_agent
    assert (request["connect_timeout"], request["read_timeout"]) == (10.0, 60.0)


def test_the_bearer_token_is_sent_as_a_header(mocker: MockerFixture) -> None:
    k = Kube.for_host("http://127.0.0.1:9", token="t0k")
    call = mocker.patch.object(k._pool, "request", return_value=answer(200, b"{}"))
    k.get("/api/v1/nodes")
    assert sent(call.call_args)["headers"]["authorization"] == "Bearer t0k"


def test_query_keywords_are_camel_cased_and_booleans_lowercase(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._pool, "request", return_value=answer(200, b'{"items":[]}'))
    client.list("/api/v1/pods", label_selector="a=b", limit=500, continue_="tok", allow_watch_bookmarks=True, x=None)
    assert sent(call.call_args)["target"] == (
        "/api/v1/pods?labelSelector=a%3Db&limit=500&continue=tok&allowWatchBookmarks=true"
    )


def test_request_timeout_is_split_into_connect_and_read(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._pool, "request", return_value=answer(200, b"{}"))
    client.request("GET", "/api/v1/pods", timeout=3.0)
    request = sent(call.call_args)
    assert (request["connect_timeout"], request["read_timeout"]) == (3.0, 3.0)


def test_empty_response_body_is_none(client: Kube, mocker: MockerFixture) -> None:
    mocker.patch.object(client._pool, "request", return_value=answer(200, b""))
    assert client.request("DELETE", "/api/v1/namespaces/a/pods/p") is None


def test_a_non_json_response_raises_invalid_response(client: Kube, mocker: MockerFixture) -> None:
    mocker.patch.object(client._pool, "request", return_value=answer(200, b"<html>"))
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/namespaces/a/pods/p")
    assert info.value.reason == "InvalidResponse" and not info.value.transient


def test_an_error_answer_is_classified_by_its_status_body_and_retry_after(client: Kube, mocker: MockerFixture) -> None:
    body = INVALID_POD
    mocker.patch.object(client._pool, "request", return_value=answer(422, body))
    with pytest.raises(ApiError) as info:
        client.create("/api/v1/namespaces/a/pods", {"metadata": {"name": "p"}})
    assert info.value.invalid and info.value.method == "POST"
    mocker.patch.object(client._pool, "request", return_value=answer(429, b"slow down", {"Retry-After": "3"}))
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/namespaces/a/pods/p")
    assert (info.value.status, info.value.reason, info.value.retry_after) == (429, "TooManyRequests", 3.0)


def test_a_broken_exchange_is_a_transient_status_zero_error(client: Kube, mocker: MockerFixture) -> None:
    mocker.patch.object(client._pool, "request", side_effect=ConnectionResetError("reset by peer"))
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/namespaces/a/pods/p")
    assert (info.value.status, info.value.reason, info.value.transient) == (0, "ConnectionResetError", True)


def test_a_read_timeout_is_a_timeout(client: Kube, mocker: MockerFixture) -> None:
    mocker.patch.object(client._pool, "request", side_effect=TimeoutError("The read operation timed out"))
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/namespaces/a/pods/p")
    assert (info.value.status, info.value.reason) == (0, "ReadTimeoutError")


def test_a_failed_tls_handshake_is_an_ssl_error(client: Kube, mocker: MockerFixture) -> None:
    refused = ConnectFailed(ssl.SSLCertVerificationError("certificate verify failed"))
    mocker.patch.object(client._pool, "request", side_effect=refused)
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/namespaces/a/pods/p")
    assert (info.value.status, info.value.reason, info.value.transient) == (0, "SSLError", True)


# --- requests through a proxy: the generic client's call_api -----------------------------------------


@pytest.fixture
def proxied() -> Iterator[Kube]:
    configuration = kube.k8s_client.Configuration(host="http://127.0.0.1:9")
    configuration.proxy = "http://127.0.0.1:8"
    k = Kube(configuration)
    yield k
    k.close()


def test_a_configured_proxy_sends_requests_through_the_generic_client(proxied: Kube, mocker: MockerFixture) -> None:
    assert proxied._pool is None
    call = mocker.patch.object(proxied._api, "call_api", return_value=FakeResponse(200, b'{"kind":"Pod"}'))
    assert proxied.get("/api/v1/namespaces/a/pods/p", resource_version="0") == {"kind": "Pod"}
    args, kwargs = call.call_args
    assert args == ("/api/v1/namespaces/a/pods/p", "GET")
    assert kwargs["auth_settings"] == ["BearerToken"]
    assert kwargs["_preload_content"] is False
    assert kwargs["_request_timeout"] == (10.0, 60.0)
    assert kwargs["query_params"] == [("resourceVersion", "0")]


def test_api_exceptions_from_call_api_become_api_errors(proxied: Kube, mocker: MockerFixture) -> None:
    body = INVALID_POD
    mocker.patch.object(proxied._api, "call_api", side_effect=api_exception(422, body))
    with pytest.raises(ApiError) as info:
        proxied.create("/api/v1/namespaces/a/pods", {"metadata": {"name": "p"}})
    assert info.value.invalid and info.value.method == "POST"
    assert isinstance(info.value.__cause__, kube.ApiException)


def test_urllib3_errors_from_call_api_become_status_zero(proxied: Kube, mocker: MockerFixture) -> None:
    mocker.patch.object(proxied._api, "call_api", side_effect=urllib3.exceptions.ProtocolError("reset"))
    with pytest.raises(ApiError) as info:
        proxied.get("/api/v1/namespaces/a/pods/p")
    assert info.value.status == 0 and info.value.transient


def test_a_tls_error_without_body_is_wrapped_despite_the_36x_decode_bug(proxied: Kube, mocker: MockerFixture) -> None:
    # rest.py raises ApiException(status=0) without body; 36.x call_api then fails on body.decode().
    mocker.patch.object(
        proxied._api.rest_client, "request", side_effect=kube.ApiException(status=0, reason="SSLError\ncert verify failed")
    )
    with pytest.raises(ApiError) as info:
        proxied.get("/api/v1/namespaces/a/pods/p")
    assert (info.value.status, info.value.reason, info.value.transient) == (0, "SSLError", True)


def test_a_refused_connection_is_a_transient_api_error() -> None:
    with Kube.for_host("http://127.0.0.1:9") as k, pytest.raises(ApiError) as info:
        k.get("/api/v1/namespaces")
    assert info.value.status == 0 and info.value.transient


def test_delete_with_uid_sends_a_precondition(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._pool, "request", return_value=answer(200, b'{"kind":"Pod"}'))
    client.delete("/api/v1/namespaces/a/pods/p", uid="u-1", grace_seconds=0, propagation="Background")
    assert sent(call.call_args)["method"] == "DELETE"
    assert sent(call.call_args)["body"] == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "preconditions": {"uid": "u-1"},
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Background",
    }


@pytest.mark.parametrize(
    ("patch_type", "content_type"),
    [
        ("merge", "application/merge-patch+json"),
        ("strategic", "application/strategic-merge-patch+json"),
        ("apply", "application/apply-patch+yaml"),
    ],
)
def test_patch_sends_the_content_type_of_its_patch_type(
    client: Kube, mocker: MockerFixture, patch_type: str, content_type: str
) -> None:
    call = mocker.patch.object(client._pool, "request", return_value=answer(200, b"{}"))
    client.patch("/api/v1/namespaces/a/pods/p", {"metadata": {"labels": {"x": "y"}}}, patch_type=patch_type, field_manager="tfjob")
    assert sent(call.call_args)["headers"]["Content-Type"] == content_type
    assert sent(call.call_args)["target"] == "/api/v1/namespaces/a/pods/p?fieldManager=tfjob"


def test_json_patch_sends_a_list_and_apply_can_force(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._pool, "request", return_value=answer(200, b"{}"))
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    client.patch("/apis/apps/v1/namespaces/a/deployments/d", ops, patch_type="json")
    assert sent(call.call_args)["body"] == ops
    assert sent(call.call_args)["headers"]["Content-Type"] == "application/json-patch+json"
    client.patch("/api/v1/namespaces/a/pods/p", {}, patch_type="apply", field_manager="m", force=True)
    assert sent(call.call_args)["target"] == "/api/v1/namespaces/a/pods/p?fieldManager=m&force=true"


@pytest.mark.parametrize(
    ("body", "options", "match"),
    [
        ({}, {"patch_type": "yaml"}, "patch_type"),
        ({}, {"patch_type": "apply"}, "field_manager"),
        ({}, {"patch_type": "json"}, "list"),
    ],
)
def test_patch_rejects_bad_arguments_before_any_request(client: Kube, mocker: MockerFixture, body: Any, options: dict[str, Any], match: str) -> None:
    call = mocker.patch.object(client._pool, "request")
    with pytest.raises(ValueError, match=match):
        client.patch("/api/v1/namespaces/a/pods/p", body, **options)
    call.assert_not_called()


def test_on_request_reports_verb_resource_code_and_duration(mocker: MockerFixture) -> None:
    seen: list[tuple[str, str, int, float]] = []
    k = Kube.for_host("http://127.0.0.1:9", on_request=lambda *a: seen.append(a))
    mocker.patch.object(k._pool, "request", side_effect=[
        answer(200, b"{}"),
        answer(201, b"{}"),
        answer(404, status_body(404, "NotFound")),
        answer(200, b"{}"),
        answer(200, b"{}"),
    ])
    k.get("/api/v1/namespaces/a/pods/p")
    k.create("/api/v1/namespaces/a/pods", {})
    with pytest.raises(ApiError):
        k.delete("/api/v1/namespaces/a/pods/p")
    k.patch("/apis/kubeflow.org/v1/namespaces/a/tensorflowjobs/j/status", {"status": {}})
    k.get("/version")
    assert [s[:3] for s in seen] == [
        ("get", "pods", 200),
        ("create", "pods", 201),
        ("delete", "pods", 404),
        ("patch", "tensorflowjobs/status", 200),
        ("get", "/version", 200),
    ]
    assert all(s[3] >= 0 for s in seen)


def test_a_failing_on_request_hook_never_breaks_a_request(mocker: MockerFixture) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("metrics down")

    k = Kube.for_host("http://127.0.0.1:9", on_request=broken)
    mocker.patch.object(k._pool, "request", return_value=answer(200, b'{"ok":1}'))
    assert k.get("/api/v1/nodes/n") == {"ok": 1}


# --- throttling ------------------------------------------------------------------------------------


def test_token_bucket_allows_a_burst_then_paces_at_qps() -> None:
    clock = FakeClock(start=100.0)
    bucket = TokenBucket(10, 3, clock=clock)
    waits = [bucket.acquire() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.1])


def test_token_bucket_refills_while_idle_up_to_burst() -> None:
    clock = FakeClock(start=100.0)
    bucket = TokenBucket(2, 2, clock=clock)
    bucket.acquire()
    bucket.acquire()
    clock.step(60)
    assert [bucket.acquire() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_token_bucket_reservations_queue_up_across_threads() -> None:
    clock = FakeClock(start=100.0)
    bucket = TokenBucket(4, 1, clock=clock)
    delays = sorted(bucket.reserve() for _ in range(4))
    assert delays == pytest.approx([0.0, 0.25, 0.5, 0.75])


def test_qps_throttles_requests_but_not_watches(mocker: MockerFixture) -> None:
    k = Kube.for_host("http://127.0.0.1:9", qps=5, burst=1)
    acquire = mocker.patch.object(k._limiter, "acquire", return_value=0.0)
    mocker.patch.object(k._pool, "request", return_value=answer(200, b"{}"))
    mocker.patch.object(k._watch_api, "call_api", return_value=FakeResponse(200, chunks=[]))
    k.get("/api/v1/nodes/a")
    k.list("/api/v1/nodes")
    k.watch("/api/v1/nodes", resource_version="1", timeout_seconds=300, read_timeout=90)
    assert acquire.call_count == 2


def test_qps_zero_means_unlimited() -> None:
    assert Kube.for_host("http://127.0.0.1:9", qps=0)._limiter is None


# --- configuration -----------------------------------------------------------------------------------


def test_pool_size_is_set_before_the_rest_client_exists() -> None:
    k = Kube.for_host("http://127.0.0.1:9", pool_size=7)
    assert k._api.rest_client.pool_manager.connection_pool_kw["maxsize"] == 7
    assert k._watch_api is not k._api
    assert k._watch_api.configuration is not k._api.configuration
    assert k._watch_api.rest_client.pool_manager.connection_pool_kw["maxsize"] == kube.WATCH_POOL_SIZE


def test_urllib3_does_not_retry_on_its_own() -> None:
    k = Kube.for_host("http://127.0.0.1:9")
    retries = k._api.rest_client.pool_manager.connection_pool_kw["retries"]
    assert retries.total == 0 and retries.redirect == 0 and not retries.raise_on_redirect


def test_a_kubeconfig_is_loaded_into_an_explicit_configuration(tmp_path: Any) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "secret-token"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }))
    k = Kube.load(str(path), pool_size=3)
    assert k.host == "https://127.0.0.1:6443"
    assert k.configuration.auth_settings()["BearerToken"]["value"] == "Bearer secret-token"
    assert kube.k8s_client.Configuration._default is None  # the global default is never touched


def test_a_missing_kubeconfig_is_a_config_error(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match="kubeconfig"):
        Kube.load(str(tmp_path / "absent"))


def test_no_kubeconfig_outside_a_cluster_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ConfigError, match="--kubeconfig"):
        Kube.load(None)


def test_in_cluster_credentials_come_from_the_service_account_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr(kube.k8s_config.incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(kube.k8s_config.incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    k = Kube.load(None)
    assert k.host == "https://10.0.0.1:443"
    assert k.configuration.auth_settings()["BearerToken"]["value"] == "bearer sa-token"


# --- discovery -------------------------------------------------------------------------------------

JOBS_RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "kubeflow.org/v1",
    "resources": [
        {"name": "tensorflowjobs", "kind": "TensorFlowJob", "namespaced": True},
        {"name": "tensorflowjobs/status", "kind": "TensorFlowJob", "namespaced": True},
    ],
}


def test_has_api_answers_from_discovery_and_caches(mocker: MockerFixture) -> None:
    clock = FakeClock(start=100.0)
    k = Kube.for_host("http://127.0.0.1:9", clock=clock)
    get = mocker.patch.object(k, "get", return_value=JOBS_RESOURCES)
    assert k.has_api("kubeflow.org", "v1")
    assert k.has_api("kubeflow.org", "v1", "TensorFlowJob")
    assert not k.has_api("kubeflow.org", "v1", "PyTorchJob", crds=False)
    get.assert_called_once_with("/apis/kubeflow.org/v1")


def test_has_api_is_false_on_404_and_asks_again_later(mocker: MockerFixture) -> None:
    clock = FakeClock(start=100.0)
    k = Kube.for_host("http://127.0.0.1:9", clock=clock)
    get = mocker.patch.object(k, "get", side_effect=[ApiError(404), JOBS_RESOURCES])
    assert not k.has_api("kubeflow.org", "v1")
    assert not k.has_api("kubeflow.org", "v1")
    clock.step(11)
    assert k.has_api("kubeflow.org", "v1")
    assert get.call_count == 2


def test_has_api_raises_other_errors(mocker: MockerFixture) -> None:
    k = Kube.for_host("http://127.0.0.1:9")
    mocker.patch.object(k, "get", side_effect=ApiError(503))
    with pytest.raises(ApiError):
        k.has_api("", "v1", "Pod")


# --- watches ---------------------------------------------------------------------------------------


def event_line(kind: str, name: str, rv: str) -> bytes:
    return json.dumps({"type": kind, "object": {"metadata": {"name": name, "resourceVersion": rv}}}).encode() + b"\n"


def test_watch_requests_bookmarks_and_uses_the_watch_pool(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._watch_api, "call_api", return_value=FakeResponse(200, chunks=[]))
    plain = mocker.patch.object(client._api, "call_api")
    client.watch("/api/v1/pods", resource_version="42", timeout_seconds=321, read_timeout=90, label_selector="x")
    plain.assert_not_called()
    kwargs = call.call_args.kwargs
    assert dict(kwargs["query_params"]) == {
        "labelSelector": "x",
        "watch": "true",
        "allowWatchBookmarks": "true",
        "resourceVersion": "42",
        "timeoutSeconds": "321",
    }
    assert kwargs["_request_timeout"] == (10.0, 90)
    assert kwargs["_preload_content"] is False


def test_watch_stream_decodes_lines_split_across_chunks() -> None:
    data = event_line("ADDED", "a", "1") + b"\n" + event_line("BOOKMARK", "", "2")
    response = FakeResponse(chunks=[data[:10], data[10:40], data[40:]])
    events = list(WatchStream(response))
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [("ADDED", "1"), ("BOOKMARK", "2")]
    assert response.closed and response.released


def test_watch_stream_raises_status_zero_on_a_broken_connection() -> None:
    class Broken(FakeResponse):
        def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
            yield event_line("ADDED", "a", "1")
            raise urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead")

    stream = WatchStream(Broken())
    assert next(stream)["type"] == "ADDED"
    with pytest.raises(ApiError) as info:
        next(stream)
    assert info.value.status == 0 and info.value.transient


def test_watch_stream_raises_on_an_undecodable_line() -> None:
    with pytest.raises(ApiError, match="bad watch line"):
        list(WatchStream(FakeResponse(chunks=[b"{not json\n"])))


def test_closing_a_watch_stream_before_reading_releases_it() -> None:
    response = FakeResponse(chunks=[event_line("ADDED", "a", "1")])
    stream = WatchStream(response)
    stream.close()
    assert list(stream) == []
    assert response.closed and response.released


@pytest.fixture
def watch_server() -> Iterator[str]:
    with held_open_server("application/json", event_line("ADDED", "a", "1")) as url:
        yield url


def test_close_from_another_thread_unblocks_a_blocked_reader(watch_server: str) -> None:
    k = Kube.for_host(watch_server)
    stream = k.watch("/api/v1/pods", resource_version="1", timeout_seconds=300, read_timeout=60)
    seen: list[dict[str, Any]] = []
    ended = threading.Event()

    def read() -> None:
        seen.extend(stream)
        ended.set()

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.005)  # polling for the first event, bounded by the deadline
    assert seen, "the first event never arrived"
    stream.close()
    assert ended.wait(5), "close() did not unblock the reader"
    reader.join(5)
    assert [e["object"]["metadata"]["name"] for e in seen] == ["a"]
    k.close()


def test_kube_close_closes_open_watches(mocker: MockerFixture) -> None:
    k = Kube.for_host("http://127.0.0.1:9")
    response = FakeResponse(chunks=[])
    mocker.patch.object(k._watch_api, "call_api", return_value=response)
    stream = k.watch("/api/v1/pods", resource_version="1", timeout_seconds=300, read_timeout=60)
    k.close()
    assert stream.closed and response.released


# --- lean import ----------------------------------------------------------------------------------


def assert_runs_in_a_fresh_interpreter(script: str) -> None:
    """Run `script` where nothing is imported yet (the test session has loaded everything)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_importing_the_client_boundary_skips_generated_apis_and_models() -> None:
    assert_runs_in_a_fresh_interpreter(
        "import sys, kube.client as k; "
        "loaded = [m for m in sys.modules if m.startswith(('kubernetes.client.api.', 'kubernetes.client.models.'))]; "
        "assert not loaded and 'kubernetes.watch' not in sys.modules, loaded; "
        "k.Kube.for_host('https://127.0.0.1:1', token='t', verify_ssl=False).close(); "
        "from bench._typed_models import decode_as_model; "
        "assert decode_as_model('{\"metadata\": {\"name\": \"p\"}}', 'V1Pod').metadata.name == 'p'"
    )


def test_importing_the_client_boundary_defers_the_loaders_rarely_used_dependencies() -> None:
    assert_runs_in_a_fresh_interpreter(
        "import sys, kube.client; "
        "heavy = ('requests', 'requests_oauthlib', 'oauthlib', 'multiprocessing', 'dateutil'); "
        "loaded = [m for m in sys.modules if m.split('.')[0] in heavy]; "
        "assert not loaded, loaded"
    )


def test_deferred_dependencies_of_the_client_core_work_when_first_used() -> None:
    assert_runs_in_a_fresh_interpreter(
        "import kube.client; "
        "from kubernetes.client import api_client, rest; "
        "from kubernetes.config import kube_config; "
        "import requests_oauthlib, oauthlib.oauth2.rfc6749.errors as errors; "
        "assert kube_config.oauthlib.oauth2.rfc6749.errors.InvalidClientIdError is errors.InvalidClientIdError; "
        "assert rest.should_bypass_proxies('https://10.0.0.1', no_proxy='10.0.0.1') is True; "
        "assert api_client.parse('2026-12-01T00:00:00Z').year == 2026; "
        "pool = api_client.ThreadPool(1); pool.close(); "
        "session = kube_config.OAuth2Session(client_id='c'); "
        "assert isinstance(session, requests_oauthlib.OAuth2Session)"
    )


# --- models (benchmarks only) ------------------------------------------------------------------------


def test_decode_as_model_builds_client_models() -> None:
    raw = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"}})
    from bench._typed_models import decode_as_model

    pod = decode_as_model(raw, "V1Pod")
    assert type(pod).__name__ == "V1Pod" and pod.metadata.name == "p"


def test_write_fence_refuses_writes_locally_and_is_not_transient() -> None:
    from kube import FENCED_REASON, ApiError, Kube

    kube = Kube.for_host("https://127.0.0.1:1", token="t", verify_ssl=False)
    kube.write_fence = lambda _method, _path: False
    try:
        kube.create("/api/v1/namespaces/ns/pods", {"metadata": {"name": "p"}})
        raise AssertionError("the fenced write went out")
    except ApiError as error:
        assert error.reason == FENCED_REASON and not error.transient
    finally:
        kube.close()
