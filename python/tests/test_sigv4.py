"""The standard-library SigV4 signer against AWS's published test vectors (``get-vanilla``, ``post-vanilla``,
``get-vanilla-query-order-key-case`` of the SigV4 test suite; also what ``@smithy/signature-v4``, behind the
TypeScript SDK's ``awsSigV4``, computes for them), against the TypeScript signer for a request of the API, and against
botocore's signer when botocore is installed."""

from __future__ import annotations

import datetime
import os
import unittest
from unittest import mock

from agent_scheduler import Credentials, HttpRequest, MissingExtraError, SigV4Signer
from agent_scheduler.sigv4 import default_credentials

SUITE_CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
SUITE_TIME = datetime.datetime(2015, 8, 30, 12, 36, 0, tzinfo=datetime.timezone.utc)


def suite_signer(service: str = "service") -> SigV4Signer:
    return SigV4Signer(
        region="us-east-1", service=service, credentials=lambda: SUITE_CREDENTIALS, now=lambda: SUITE_TIME
    )


def signature_of(request: HttpRequest, signer: SigV4Signer | None = None) -> str:
    return (signer or suite_signer())(request).headers["authorization"].rsplit("Signature=", 1)[1]


class SuiteVectorsTest(unittest.TestCase):
    def test_the_aws_sigv4_suite_vectors(self) -> None:
        cases = [
            ("get-vanilla", "GET", "https://example.amazonaws.com/",
             "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
            ("post-vanilla", "POST", "https://example.amazonaws.com/",
             "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
            ("get-vanilla-query-order-key-case", "GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1",
             "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
        ]
        for name, method, url, expected in cases:
            with self.subTest(name):
                self.assertEqual(signature_of(HttpRequest(method, url, {})), expected)

    def test_a_request_of_the_api_as_the_typescript_signer_signs_it(self) -> None:
        # @smithy/signature-v4 (applyChecksum off) given the same request, as `awsSigV4` hands it over.
        request = HttpRequest(
            "POST", "https://example.amazonaws.com/v1/tasks/a%20b?queue=x%20y", {"content-type": "application/json"},
            b'{"a":1}',
        )
        self.assertEqual(
            signature_of(request), "ea6cbb4c38ec0cfd2f1a5cda066884545f4af91a00e0169a416bef359431979b"
        )

    def test_signing_drops_a_bearer_token_and_adds_the_session_token(self) -> None:
        signer = SigV4Signer(
            region="us-east-1",
            credentials=lambda: Credentials("AKID", "secret", "session-token"),
            now=lambda: SUITE_TIME,
        )
        signed = signer(HttpRequest("GET", "https://example.com/v1/tasks", {"authorization": "Bearer x"}))
        self.assertTrue(signed.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID/20150830/"))
        self.assertEqual(signed.headers["x-amz-security-token"], "session-token")
        self.assertIn("SignedHeaders=host;x-amz-date;x-amz-security-token", signed.headers["authorization"])


class CredentialsTest(unittest.TestCase):
    def test_a_profile_without_botocore_names_the_extra(self) -> None:
        with mock.patch.dict("sys.modules", {"botocore": None, "botocore.session": None}), self.assertRaises(
            MissingExtraError
        ) as raised:
            default_credentials(profile="prod")
        self.assertIn("agent-scheduler[aws]", str(raised.exception))

    def test_environment_keys_without_botocore(self) -> None:
        env = {"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": ""}
        with mock.patch.dict("sys.modules", {"botocore": None, "botocore.session": None}), mock.patch.dict(
            os.environ, env
        ):
            self.assertEqual(default_credentials()(), Credentials("AKIDENV", "s", None))


class BotocoreTest(unittest.TestCase):
    def test_the_same_signature_as_botocore(self) -> None:
        try:
            from botocore.auth import SigV4Auth  # noqa: PLC0415  # pyright: ignore[reportMissingImports]
            from botocore.awsrequest import AWSRequest  # noqa: PLC0415  # pyright: ignore[reportMissingImports]
            from botocore.credentials import Credentials as BotoCredentials  # noqa: PLC0415  # pyright: ignore[reportMissingImports]
        except ImportError:
            self.skipTest("botocore is not installed (apt-get install python3-botocore)")
        url = "https://abc.execute-api.eu-west-1.amazonaws.com/v1/tasks/t_1/cancel?include=payload&limit=5"
        body = b'{"cascade":true}'
        boto = AWSRequest(method="POST", url=url, data=body, headers={"content-type": "application/json"})
        auth = SigV4Auth(BotoCredentials("AKIDEXAMPLE", "secret", "tok"), "execute-api", "eu-west-1")
        with mock.patch("botocore.auth.get_current_datetime", return_value=SUITE_TIME.replace(tzinfo=None)):
            auth.add_auth(boto)
        ours = SigV4Signer(
            region="eu-west-1", credentials=lambda: Credentials("AKIDEXAMPLE", "secret", "tok"), now=lambda: SUITE_TIME
        )(HttpRequest("POST", url, {"content-type": "application/json"}, body))
        self.assertEqual(ours.headers["authorization"], boto.headers["Authorization"])


if __name__ == "__main__":
    unittest.main()
