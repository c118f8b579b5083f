# -*- coding: utf-8 -*-
# Copyright: rdma-manager contributors
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The controller's half of rdma_state: runs the module (which applies with a rollback
timeout), then confirms the pending change in a second module run over a new connection. The
managed host never confirms its own change: if the change cut the controller off, the
confirmation cannot arrive and rdma-managerd rolls the change back at the timeout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

display = Display()

STATE_MODULE = "rdmamanager.rdma.rdma_state"
CONFIRM_MODULE = "rdmamanager.rdma.rdma_confirm"


def unreachable_after_apply(pending, timeout, why):
    """The result when the confirmation could not reach the host: unreachable, as Ansible
    reports a host it cannot connect to (a play's ignore_unreachable lets it go on)."""
    return dict(
        unreachable=True,
        confirmed=False,
        pending=pending,
        msg=(
            "the change was applied but the controller could not reach the host again to "
            "confirm it (%s); rdma-managerd rolls it back by itself when its %s s timeout "
            "passes" % (why, timeout)
        ),
    )


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("state", "src", "rollback_timeout", "confirm", "rdma_cli"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp

        args = dict(self._task.args)
        try:
            confirm = boolean(args.get("confirm", True), strict=True)
        except TypeError as e:
            result.update(failed=True, msg="confirm: %s" % to_text(e))
            return result

        applied = self._execute_module(
            module_name=STATE_MODULE, module_args=args, task_vars=task_vars
        )
        result.update(applied)
        pending = applied.get("pending")
        if applied.get("failed") or applied.get("unreachable") or not pending or not confirm:
            return result

        timeout = args.get("rollback_timeout", 60)
        # A new connection: over SSH a persistent master would carry the confirmation over
        # the very session the change may have cut; reset() stops it, the next run connects
        # afresh and so proves the host is still reachable.
        # Connections without a session to reset (local) only warn that they have none.
        if getattr(type(self._connection), "reset", ConnectionBase.reset) is not ConnectionBase.reset:
            try:
                self._connection.reset()
            except Exception as e:  # a failed reset must not confirm nor lose the result
                display.vvv("rdma_state: resetting the connection failed: %s" % to_text(e))

        try:
            confirmed = self._execute_module(
                module_name=CONFIRM_MODULE,
                module_args=dict(pending=pending, rdma_cli=args.get("rdma_cli")),
                task_vars=task_vars,
            )
        except AnsibleConnectionFailure as e:
            result.update(unreachable_after_apply(pending, timeout, to_text(e)))
            return result

        if confirmed.get("unreachable"):
            result.update(unreachable_after_apply(pending, timeout, confirmed.get("msg", "")))
        elif confirmed.get("failed"):
            result.update(
                failed=True,
                confirmed=False,
                rc=confirmed.get("rc"),
                error=confirmed.get("error"),
                msg="the change was applied but confirming it failed: %s"
                % confirmed.get("msg", ""),
            )
        else:
            result["confirmed"] = True
        return result
