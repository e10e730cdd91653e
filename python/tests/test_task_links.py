"""``Client.get_task_links``: a task's links as the operator reads them, each with its status."""

from __future__ import annotations

import unittest

from agent_scheduler import AgentSchedulerError

from .stack import needs_stack, operator


@needs_stack
class TaskLinksTest(unittest.TestCase):
    def test_names_the_dependencies_and_dependents_of_a_task_with_their_statuses(self) -> None:
        ops = operator()
        first = ops.submit_task({"queue": "py-types", "payload": {"step": 1}}).task
        then = ops.submit_task({"queue": "py-types", "payload": {"step": 2}, "dependsOn": [first["taskId"]]}).task

        links = ops.get_task_links(first["taskId"])
        self.assertEqual(links["taskId"], first["taskId"])
        self.assertEqual(links["dependents"], [{"taskId": then["taskId"], "status": "waiting", "queue": "py-types"}])
        self.assertEqual(links["dependencies"], [])
        self.assertEqual(links["children"], [])
        self.assertNotIn("parent", links)

        waiting = ops.get_task_links(then["taskId"])
        queued = {"taskId": first["taskId"], "status": "queued", "queue": "py-types"}
        self.assertEqual(waiting["dependencies"], [queued])
        ops.cancel_task(then["taskId"])
        ops.cancel_task(first["taskId"])

    def test_a_task_that_is_not_there_is_refused_with_its_code(self) -> None:
        with self.assertRaises(AgentSchedulerError) as refused:
            operator().get_task_links("t_" + "a" * 26)
        self.assertEqual((refused.exception.status, refused.exception.code), (404, "TaskNotFound"))


if __name__ == "__main__":
    unittest.main()
