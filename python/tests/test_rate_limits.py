"""An operator's rate-limit routes against the local stack: a limit set (``set_rate_limit``), read alone
(``get_rate_limit``) and in the list (``list_rate_limits``) with its window, new terms replacing the old, and terms
the server refuses."""

from __future__ import annotations

import unittest

from agent_scheduler import AgentSchedulerError

from .stack import needs_stack, operator

NAME = "py.rate-limits"


@needs_stack
class RateLimitRoutesTest(unittest.TestCase):
    def test_a_limit_set_is_read_alone_and_listed_and_new_terms_replace_it(self) -> None:
        ops = operator()

        set_ = ops.set_rate_limit(NAME, {"limit": 5, "per": "minute"})
        alone = ops.get_rate_limit(NAME)
        raised = ops.set_rate_limit(NAME, {"limit": 9, "per": "minute", "burst": 3})
        listed = [limit for limit in ops.list_rate_limits() if limit["name"] == NAME]

        self.assertEqual((set_["limit"], set_["per"], set_["source"]), (5, "minute", "set"))
        self.assertEqual((alone["name"], alone["limit"]), (NAME, 5))
        self.assertIn("start", alone["window"])
        self.assertEqual((raised["limit"], raised.get("burst")), (9, 3))
        self.assertEqual([(limit["limit"], limit.get("burst")) for limit in listed], [(9, 3)])

    def test_terms_the_server_refuses_are_a_validation_error_and_an_unknown_limit_is_not_found(self) -> None:
        ops = operator()
        with self.assertRaises(AgentSchedulerError) as refused:
            ops.set_rate_limit(NAME + "-bad", {"limit": -1, "per": "minute"})
        self.assertEqual((refused.exception.status, refused.exception.code), (400, "ValidationError"))
        with self.assertRaises(AgentSchedulerError) as missing:
            ops.get_rate_limit("py.never-set")
        self.assertEqual(missing.exception.status, 404)
