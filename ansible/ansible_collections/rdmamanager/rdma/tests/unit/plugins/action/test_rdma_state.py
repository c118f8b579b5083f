# -*- coding: utf-8 -*-
# Copyright: rdma-manager contributors
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The action plugin's confirm-or-rollback: the module applies, then the controller confirms
in a second module run after resetting the connection; an unreachable host is left to roll
back by itself. Needs ansible-core importable by this Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import unittest

try:
    from ansible.errors import AnsibleConnectionFailure
    from ansible_collections.rdmamanager.rdma.plugins.action.rdma_state import ActionModule
except ImportError as e:
    raise unittest.SkipTest("ansible-core is not importable here: %s" % e)

PENDING = "/org/rdmamanager/RdmaManager1/Change/1"
APPLIED = {"changed": True, "changes": [{"path": "roce[mlx5_1/1].tos"}], "pending": PENDING}


class Shell:
    tmpdir = "/tmp/x"


class Connection:
    """A connection with a session to reset (as ssh's persistent master)."""

    _shell = Shell()

    def __init__(self, log):
        self.log = log

    def reset(self):
        self.log.append("reset")


class Task:
    async_val = 0
    check_mode = False
    action = "rdmamanager.rdma.rdma_state"

    def __init__(self, args):
        self.args = args


class Recorded(ActionModule):
    """The plugin with module runs answered from `answers` (a result, or an exception)."""

    def __init__(self, args, answers):
        self.log = []
        self.answers = list(answers)
        super(Recorded, self).__init__(Task(args), Connection(self.log), None, None, None, None)

    def _execute_module(self, module_name=None, module_args=None, task_vars=None, **kwargs):
        self.log.append((module_name, dict(module_args)))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)


class ConfirmOrRollback(unittest.TestCase):
    def test_the_controller_confirms_after_the_apply_over_a_new_connection(self):
        a = Recorded({"state": {"roce": []}, "rollback_timeout": 30}, [APPLIED, {"changed": True}])
        result = a.run(task_vars={})
        self.assertEqual(
            a.log,
            [
                ("rdmamanager.rdma.rdma_state", {"state": {"roce": []}, "rollback_timeout": 30}),
                "reset",
                ("rdmamanager.rdma.rdma_confirm", {"pending": PENDING, "rdma_cli": None}),
            ],
        )
        self.assertTrue(result["confirmed"])
        self.assertTrue(result["changed"])
        self.assertNotIn("failed", result)

    def test_an_unreachable_host_is_left_to_roll_back_at_its_timeout(self):
        a = Recorded(
            {"state": {}, "rollback_timeout": 30},
            [APPLIED, AnsibleConnectionFailure("ssh: connect to host node1 port 22: No route to host")],
        )
        result = a.run(task_vars={})
        self.assertNotIn("failed", result)
        self.assertTrue(result["unreachable"])
        self.assertFalse(result["confirmed"])
        self.assertEqual(result["pending"], PENDING)
        self.assertIn("No route to host", result["msg"])
        self.assertIn("rolls it back by itself when its 30 s timeout passes", result["msg"])

    def test_a_failed_confirmation_fails_the_task_with_its_message(self):
        gone = {"failed": True, "rc": 4, "error": "not-found", "msg": "rdma-cli confirm: not found (exit 4): gone"}
        result = Recorded({"state": {}}, [APPLIED, gone]).run(task_vars={})
        self.assertTrue(result["failed"])
        self.assertEqual((result["rc"], result["error"]), (4, "not-found"))
        self.assertIn("confirming it failed: rdma-cli confirm: not found (exit 4): gone", result["msg"])

    def test_confirm_false_leaves_the_change_pending(self):
        a = Recorded({"state": {}, "confirm": False}, [APPLIED])
        result = a.run(task_vars={})
        self.assertEqual(len(a.log), 1)
        self.assertEqual(result["pending"], PENDING)
        self.assertNotIn("confirmed", result)

    def test_nothing_to_confirm_without_a_pending_change(self):
        for applied in (
            {"changed": False, "changes": [], "pending": None},
            {"failed": True, "msg": "refused", "pending": None},
        ):
            a = Recorded({"state": {}}, [applied])
            result = a.run(task_vars={})
            self.assertEqual(len(a.log), 1)
            self.assertNotIn("confirmed", result)

    def test_a_bad_confirm_value_is_refused_before_anything_runs(self):
        a = Recorded({"state": {}, "confirm": "maybe"}, [])
        result = a.run(task_vars={})
        self.assertTrue(result["failed"])
        self.assertEqual(a.log, [])


if __name__ == "__main__":
    unittest.main()
