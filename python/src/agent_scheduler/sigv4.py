"""Signing requests with AWS Signature Version 4, standard library only.

For a deployed stack whose operator routes use IAM (``execute-api``)::

    client = Client(endpoint, signer=SigV4Signer(region="eu-west-1"))

Credentials come from the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``),
or from botocore's chain (profiles, SSO, instance roles…) when ``botocore`` is installed: ``pip install
'agent-scheduler[aws]'``.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import os
import posixpath
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .transport import HttpRequest

ALGORITHM = "AWS4-HMAC-SHA256"
# Headers a proxy may change on the way: never signed (botocore leaves out the same ones).
_UNSIGNED = frozenset({"authorization", "user-agent", "expect", "x-amzn-trace-id"})


@dataclass(frozen=True)
class Credentials:
    """An access key, its secret, and the session token of temporary credentials."""

    access_key: str
    secret_key: str
    token: str | None = None

    def __repr__(self) -> str:
        return f"Credentials(access_key={self.access_key!r}, secret_key='***')"


CredentialProvider = Callable[[], Credentials]
"""Called for every signature, so that refreshed temporary credentials are used."""


class MissingExtraError(RuntimeError):
    """A feature needs the optional ``aws`` extra (botocore)."""


def environment_credentials() -> Credentials | None:
    """Credentials from ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN``, if set."""
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    return Credentials(key, secret, os.environ.get("AWS_SESSION_TOKEN") or None)


def default_credentials(profile: str | None = None) -> CredentialProvider:
    """The standard chain: botocore's when it is importable, else the environment's keys.

    A ``profile`` needs botocore (``pip install 'agent-scheduler[aws]'``); without it a :class:`MissingExtraError`
    says so.
    """
    try:
        # Imported only here: it is an optional extra, and slow to import.
        import botocore.session  # noqa: PLC0415  # pyright: ignore[reportMissingImports, reportMissingTypeStubs]
    except ImportError:
        if profile is not None:
            raise MissingExtraError(
                f"the AWS profile {profile!r} needs botocore: pip install 'agent-scheduler[aws]'"
            ) from None
        found = environment_credentials()
        if found is None:
            raise MissingExtraError(
                "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pip install "
                "'agent-scheduler[aws]' for botocore's chain (profiles, SSO, instance roles)"
            ) from None
        return lambda: found
    session: Any = botocore.session.Session(profile=profile)  # pyright: ignore[reportUnknownMemberType]
    resolved: Any = session.get_credentials()
    if resolved is None:
        raise RuntimeError("botocore found no AWS credentials")

    def frozen() -> Credentials:
        now: Any = resolved.get_frozen_credentials()
        return Credentials(str(now.access_key), str(now.secret_key), now.token)

    return frozen


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def _quote(text: str, safe: str = "-_.~") -> str:
    return urllib.parse.quote(text, safe=safe)


def canonical_request(request: HttpRequest, signed: list[str], payload_hash: str) -> str:
    """The canonical request of SigV4 for a service other than S3: the path normalised and encoded again."""
    parts = urllib.parse.urlsplit(request.url)
    path = parts.path or "/"
    normalised = posixpath.normpath(path) if path != "/" else "/"
    if path.endswith("/") and normalised != "/":
        normalised += "/"
    normalised = "/" + normalised.lstrip("/")
    query = sorted(
        (_quote(k), _quote(v)) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    )
    headers = {k.lower(): " ".join(v.strip().split()) for k, v in request.headers.items()}
    return "\n".join(
        [
            request.method.upper(),
            _quote(normalised, safe="/~"),
            "&".join(f"{k}={v}" for k, v in query),
            "".join(f"{name}:{headers[name]}\n" for name in signed),
            ";".join(signed),
            payload_hash,
        ]
    )


@dataclass
class SigV4Signer:
    """Signs each attempt of a request (a :data:`agent_scheduler.transport.Signer`), with its own time.

    ``credentials`` defaults to :func:`default_credentials`; ``now`` to the current UTC time (tests fix it).
    """

    region: str
    service: str = "execute-api"
    credentials: CredentialProvider | None = None
    now: Callable[[], datetime.datetime] | None = None

    def __post_init__(self) -> None:
        if self.credentials is None:
            self.credentials = default_credentials()

    def __call__(self, request: HttpRequest) -> HttpRequest:
        assert self.credentials is not None
        creds = self.credentials()
        moment = self.now() if self.now else datetime.datetime.now(datetime.timezone.utc)
        amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
        day = amz_date[:8]
        # A bearer token has no place beside a signature: IAM would refuse the request for it.
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() != "authorization"}
        headers["host"] = urllib.parse.urlsplit(request.url).netloc
        headers["x-amz-date"] = amz_date
        if creds.token:
            headers["x-amz-security-token"] = creds.token
        unsigned = HttpRequest(request.method, request.url, headers, request.body)
        signed = sorted(name for name in headers if name not in _UNSIGNED)
        canonical = canonical_request(unsigned, signed, _sha256(request.body or b""))
        scope = f"{day}/{self.region}/{self.service}/aws4_request"
        to_sign = "\n".join([ALGORITHM, amz_date, scope, _sha256(canonical.encode("utf-8"))])
        key = _hmac(("AWS4" + creds.secret_key).encode("utf-8"), day)
        for part in (self.region, self.service, "aws4_request"):
            key = _hmac(key, part)
        signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"{ALGORITHM} Credential={creds.access_key}/{scope}, SignedHeaders={';'.join(signed)}, "
            f"Signature={signature}"
        )
        # urllib sets Host itself from the URL.
        del headers["host"]
        return HttpRequest(request.method, request.url, headers, request.body)
