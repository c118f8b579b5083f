#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma-manager contributors
# SPDX-License-Identifier: MIT OR Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_confirm
short_description: Confirm or roll back a pending rdma-manager change
version_added: 0.1.0
description:
  - Confirms a change that waits for confirmation (C(rdma-cli confirm)), so that it stays, or
    rolls it back now (C(rdma-cli rollback)).
  - A pending change comes from M(rdmamanager.rdma.rdma_state) with I(confirm=false)
    (its C(pending) return value), from C(rdma-cli apply --timeout N), or
    from any rdma-manager client that set IP settings with a timeout.
  - Run it from the controller in a task after the one that applied the change. If the change
    cut the controller off, this task cannot reach the host and the change rolls itself back
    at its timeout, which is the point of confirming from the controller.
author:
  - rdma-manager contributors (!UNKNOWN)
options:
  pending:
    description:
      - The pending change's D-Bus object path, such as C(/org/rdmamanager/RdmaManager1/Change/1).
      - By default, the only pending change; it is an error when there are several.
    type: str
  state:
    description:
      - C(confirmed) keeps the change; C(rolled_back) undoes it now.
    type: str
    choices: [confirmed, rolled_back]
    default: confirmed
  rdma_cli:
    description:
      - Path of the C(rdma-cli) program on the managed host.
      - By default it is looked up on C(PATH).
    type: path
requirements:
  - rdma-manager's C(rdma-cli) and a running C(rdma-managerd) on the managed host.
attributes:
  check_mode:
    support: full
    description: Reports a change and confirms or rolls back nothing.
  diff_mode:
    support: none
    description: Returns no diff.
notes:
  - A change that has already ended (confirmed, rolled back, or timed out) is not found; the
    task fails with rdma-cli's message.
seealso:
  - module: rdmamanager.rdma.rdma_state
"""

EXAMPLES = r"""
- name: Apply and leave the change pending for two minutes
  rdmamanager.rdma.rdma_state:
    state:
      interfaces:
        - name: ib0
          type: infiniband
          mtu: 2044
    rollback_timeout: 120
    confirm: false
  register: applied

- name: Confirm it from the controller
  rdmamanager.rdma.rdma_confirm:
    pending: "{{ applied.pending }}"
  when: applied.pending is not none

- name: Undo the only pending change now
  rdmamanager.rdma.rdma_confirm:
    state: rolled_back
"""

RETURN = r"""
pending:
  description: The pending change confirmed or rolled back, as given (null for the only one).
  returned: always
  type: str
  sample: /org/rdmamanager/RdmaManager1/Change/1
rc:
  description: rdma-cli's exit status of a failed run.
  returned: failure
  type: int
  sample: 4
error:
  description:
    - The kind of failure, from rdma-cli's exit status; C(not-found) when the change has
      already ended.
  returned: failure
  type: str
  sample: not-found
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmamanager.rdma.plugins.module_utils.rdma_cli import (
    fail_from,
    run_cli,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pending=dict(type="str"),
            state=dict(type="str", default="confirmed", choices=["confirmed", "rolled_back"]),
            rdma_cli=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    pending = module.params["pending"]
    command = "confirm" if module.params["state"] == "confirmed" else "rollback"
    if module.check_mode:
        module.exit_json(changed=True, pending=pending)
    args = [command] + ([pending] if pending else [])
    rc, out, err = run_cli(module, args)
    if rc != 0:
        fail_from(module, command, rc, out, err, pending=pending)
    module.exit_json(changed=True, pending=pending)


if __name__ == "__main__":
    main()
