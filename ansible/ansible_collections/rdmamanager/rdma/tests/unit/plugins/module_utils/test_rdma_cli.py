# -*- coding: utf-8 -*-
# Copyright: rdma-manager contributors
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The pure parts of module_utils/rdma_cli.py: exit codes to failures, change lists, the diff.

Runs with pytest or with `python3 -m unittest discover`, the directory holding
ansible_collections/ on PYTHONPATH."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import unittest

from ansible_collections.rdmamanager.rdma.plugins.module_utils.rdma_cli import (
    EXIT_MEANINGS,
    daemon_text,
    document_text,
    failure,
    parse_changes,
    parse_json,
    parse_pending,
    render_diff,
)

TOS = {
    "path": "roce[mlx5_1/1].tos",
    "op": "set",
    "current": "0",
    "wanted": "106",
    "action": "org.rdmamanager.rdmamanager1.manage-roce",
}
LINK = {
    "path": "soft-links[siw0]",
    "op": "add",
    "current": "",
    "wanted": "siw over eth0",
    "action": "org.rdmamanager.rdmamanager1.manage-links",
}
GONE = {
    "path": "interfaces[ib0.8002]",
    "op": "remove",
    "current": "pkey 0x8002",
    "wanted": "",
    "action": "org.rdmamanager.rdmamanager1.manage-ipoib",
}


class ExitCodes(unittest.TestCase):
    def test_every_documented_code_has_its_own_kind(self):
        self.assertEqual(sorted(EXIT_MEANINGS), [1, 2, 3, 4, 5, 6])
        kinds = [failure("apply", rc, "", "")[0] for rc in sorted(EXIT_MEANINGS)]
        self.assertEqual(
            kinds, ["failed", "invalid", "not-authorized", "not-found", "no-daemon", "rolled-back"]
        )

    def test_the_message_keeps_the_daemons_words(self):
        stderr = 'Error: line 7: interfaces[0].infiniband.pkey: "0x0000" is not a usable P_Key\n'
        kind, msg = failure("diff", 2, "", stderr)
        self.assertEqual(kind, "invalid")
        self.assertTrue(msg.startswith("rdma-cli diff: the input was refused"), msg)
        self.assertIn("(exit 2)", msg)
        self.assertTrue(
            msg.endswith('line 7: interfaces[0].infiniband.pkey: "0x0000" is not a usable P_Key'),
            msg,
        )
        self.assertNotIn("Error: ", msg)

    def test_line_numbers_are_dropped_on_demand(self):
        stderr = 'Error: line 1: roce[0].device: RoCE device "nosuch0" does not exist\n'
        self.assertEqual(
            failure("diff", 4, "", stderr, without_lines=True)[1],
            'rdma-cli diff: not found (exit 4): roce[0].device: RoCE device "nosuch0" does not exist',
        )
        self.assertIn("line 1: roce[0]", failure("diff", 4, "", stderr)[1])
        # Only the position at the start goes, not words that happen to look like it.
        self.assertEqual(
            daemon_text("Error: soft-links[0].name: line 3: is taken\n", without_lines=True),
            "soft-links[0].name: line 3: is taken",
        )

    def test_several_lines_and_stdout_when_stderr_is_empty(self):
        self.assertEqual(daemon_text("Error: first\n\n  second  \n"), "first\nsecond")
        self.assertEqual(daemon_text("", "only on stdout\n"), "only on stdout")

    def test_an_unknown_code_is_a_failure_still(self):
        kind, msg = failure("status", 77, "", "")
        self.assertEqual(kind, "failed")
        self.assertEqual(msg, "rdma-cli status: unexpected exit status (exit 77)")

    def test_the_rolled_back_code(self):
        kind, msg = failure("apply", 6, "", "Error: verification failed: roce[mlx5_1/1].tos is 0; rolled back")
        self.assertEqual(kind, "rolled-back")
        self.assertIn("verification failed: roce[mlx5_1/1].tos is 0; rolled back", msg)


class Changes(unittest.TestCase):
    def test_objects_lists_and_an_answer_with_changes(self):
        as_list = ["roce[mlx5_1/1].tos", "set", "0", 106, "org.rdmamanager.rdmamanager1.manage-roce"]
        self.assertEqual(parse_changes([TOS]), [TOS])
        self.assertEqual(parse_changes([as_list]), [TOS])
        self.assertEqual(parse_changes({"changes": [TOS], "pending": "/"}), [TOS])
        self.assertEqual(parse_changes({"changes": []}), [])
        self.assertEqual(parse_changes(None), [])

    def test_missing_and_null_fields_are_empty_text(self):
        change = parse_changes([{"path": "memlock.soft", "op": "set", "wanted": None}])[0]
        self.assertEqual(change["current"], "")
        self.assertEqual(change["wanted"], "")

    def test_anything_else_is_refused(self):
        for bad in ("text", [["too", "short"]], [42], {"changes": "x"}):
            with self.assertRaises(ValueError):
                parse_changes(bad)

    def test_pending(self):
        self.assertEqual(
            parse_pending({"pending": "/org/rdmamanager/RdmaManager1/Change/3"}),
            "/org/rdmamanager/RdmaManager1/Change/3",
        )
        for nothing in ({"pending": "/"}, {"pending": None}, {}, [], None):
            self.assertIsNone(parse_pending(nothing))

    def test_json_or_a_clear_error(self):
        self.assertEqual(parse_json('{"a": 1}', "show"), {"a": 1})
        with self.assertRaises(ValueError) as e:
            parse_json("soft-links: []", "show")
        self.assertIn("rdma-cli show printed no JSON", str(e.exception))


class Diff(unittest.TestCase):
    def test_set_add_and_remove_in_path_order(self):
        d = render_diff([TOS, LINK, GONE])
        self.assertEqual(
            d["before"],
            "interfaces[ib0.8002]: pkey 0x8002\nroce[mlx5_1/1].tos: 0\n",
        )
        self.assertEqual(
            d["after"],
            "roce[mlx5_1/1].tos: 106\nsoft-links[siw0]: siw over eth0\n",
        )
        self.assertIn("before_header", d)
        self.assertIn("after_header", d)

    def test_no_changes_is_an_empty_diff(self):
        d = render_diff([])
        self.assertEqual((d["before"], d["after"]), ("", ""))


class Document(unittest.TestCase):
    def test_the_document_goes_over_as_json_with_its_keys_sorted(self):
        state = {"roce": [{"tos": 106, "device": "mlx5_1", "port": 1}], "memlock": {"soft": "unlimited"}}
        text = document_text(state)
        self.assertEqual(json.loads(text), state)
        self.assertLess(text.index('"memlock"'), text.index('"roce"'))
        self.assertLess(text.index('"device"'), text.index('"tos"'))


if __name__ == "__main__":
    unittest.main()
