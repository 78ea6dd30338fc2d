"""Standard Webhooks signing and destination checks (advisories.webhooks)."""

from __future__ import annotations

import base64
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from advisories.webhooks import (
    DestinationRefused,
    check_destination,
    encode_body,
    new_secret,
    secret_key,
    sign,
    signed_headers,
    validate_subscription,
)


def test_signature_verifies_with_the_reference_library() -> None:
    secret = new_secret()
    body = encode_body({"type": "advisory.published", "timestamp": "2026-01-01T00:00:00Z",
                        "data": {"id": "x_HUBWATCH-aaaa", "summary": "ünïcode & <xml>"}})
    ts = int(time.time())
    headers = signed_headers(secret, "x_HUBWATCH-aaaa.2026-01-01T00:00:00Z", ts, body)
    doc = Webhook(secret).verify(body, headers)
    assert doc["data"]["summary"] == "ünïcode & <xml>"
    # one byte changed, another id or another secret: refused
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace(b"aaaa", b"aaab"), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, {**headers, "webhook-id": "other"})
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body, headers)


def test_signature_matches_the_spec_example() -> None:
    # the Standard Webhooks spec's own test vector (standard-webhooks/libraries tests)
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    assert sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) == \
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_secrets() -> None:
    s = new_secret()
    assert s.startswith("whsec_") and len(secret_key(s)) == 32
    assert new_secret() != s
    for bad in ("", "whsec_", "secret", "whsec_!!!!", "whsec_" + base64.b64encode(b"short").decode()):
        with pytest.raises(ValueError):
            secret_key(bad)


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/x", "http://localhost:8080/x", "http://10.1.2.3/", "http://192.168.0.10/",
    "http://172.16.5.5/", "http://169.254.169.254/latest/meta-data", "http://[::1]/", "http://0.0.0.0/",
    "http://[::ffff:127.0.0.1]/", "http://224.0.0.1/", "http://100.64.0.1/", "http://[fe80::1]/",
    "http://[fd00::1]/",
])
def test_private_destinations_are_refused(url: str) -> None:
    with pytest.raises(DestinationRefused):
        check_destination(url, allow_private=False)
    assert check_destination(url, allow_private=True)


def test_names_are_resolved_and_every_address_checked() -> None:
    public = lambda host, port: ["93.184.216.34"]  # noqa: E731
    sneaky = lambda host, port: ["93.184.216.34", "10.0.0.7"]  # noqa: E731
    assert check_destination("https://hooks.example.com/x", allow_private=False, resolve=public) == ["93.184.216.34"]
    with pytest.raises(DestinationRefused, match="private"):
        check_destination("https://hooks.example.com/x", allow_private=False, resolve=sneaky)

    def fails(host: str, port: int) -> list[str]:
        raise OSError("no such host")

    with pytest.raises(DestinationRefused, match="cannot resolve"):
        check_destination("https://nowhere.invalid/x", allow_private=False, resolve=fails)
    assert check_destination("https://nowhere.invalid/x", allow_private=False, resolve=fails,
                             require_resolution=False) == []


@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd", "example.com/x", "http://",
                                 "http:///path", "http://exa mple.com/", "javascript:alert(1)", "http://h:99999/"])
def test_malformed_destinations_are_refused(url: str) -> None:
    with pytest.raises(DestinationRefused):
        check_destination(url, allow_private=True)


def test_validate_subscription() -> None:
    validate_subscription("http://127.0.0.1:9/x", ["org/name", "a.b/c-d_e"], new_secret(), allow_private=True)
    with pytest.raises(ValueError, match="repo id"):
        validate_subscription("http://127.0.0.1:9/x", ["not a repo"], None, allow_private=True)
    with pytest.raises(ValueError):
        validate_subscription("http://127.0.0.1:9/x", None, "plain", allow_private=True)
    with pytest.raises(DestinationRefused):
        validate_subscription("http://127.0.0.1:9/x", None, None, allow_private=False)
